/** A local launch that cannot go on, with a message for the person who started it (no stack trace). */
export class LaunchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LaunchError';
  }
}

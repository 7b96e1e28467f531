/**
 * Typed domain errors. Domain code throws these; one place (shared/http/errors.ts) turns them into
 * docs/rules.md, "Errors" responses. A 5xx never exposes its message: the client sees a generic text and the
 * cause goes to the log.
 */

/** One entry of a 422 body, FastAPI style: where, what, which kind. */
export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

/** The longest message an error answer carries, and the most validation issues it lists. */
export const MAX_DETAIL_CHARS = 4_096;
export const MAX_ISSUES = 100;

/**
 * A message cut to MAX_DETAIL_CHARS, saying how much was left out. An error's message can hold what a caller chose (a
 * contract's thrown message): one of 7 MB had made an answer Lambda cannot carry, and API Gateway's bare 500.
 */
export function shortened(message: string): string {
  return message.length <= MAX_DETAIL_CHARS ? message : `${message.slice(0, MAX_DETAIL_CHARS)}… (${message.length - MAX_DETAIL_CHARS} characters more)`;
}

/** A 422's issues as an answer lists them: at most MAX_ISSUES, each message shortened. */
export function shownIssues(issues: readonly ValidationIssue[]): ValidationIssue[] {
  return issues.slice(0, MAX_ISSUES).map((issue) => ({ ...issue, msg: shortened(issue.msg) }));
}

export abstract class DomainError extends Error {
  abstract readonly statusCode: number;
  /** Extra response headers (Retry-After, WWW-Authenticate…). */
  readonly headers: Record<string, string> = {};

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }

  /** Whether the message may be shown to the client (never for 5xx). */
  get expose(): boolean {
    return this.statusCode < 500;
  }

  /**
   * A 5xx that is part of normal operation, which clients are told to retry (a witness that has not
   * cosigned yet): logged at info, without a stack trace, rather than as a failure.
   */
  get expected(): boolean {
    return false;
  }
}

export class BadRequestError extends DomainError {
  readonly statusCode = 400;
}

export class InvalidChainNameError extends BadRequestError {}

export class InvalidJsonError extends BadRequestError {
  constructor() {
    super('Request body is not valid JSON');
  }
}

export class NotFoundError extends DomainError {
  readonly statusCode = 404;
}

export class ChainNotFoundError extends NotFoundError {
  readonly chainName: string;
  constructor(chainName: string) {
    super(`Chain '${chainName}' not found`);
    this.chainName = chainName;
  }
}

export class BlockNotFoundError extends NotFoundError {
  constructor(chainName: string, address: string | number) {
    super(`Block ${typeof address === 'number' ? address : `'${address}'`} not found on chain '${chainName}'`);
  }
}

export class RouteNotFoundError extends NotFoundError {
  constructor(method: string, path: string) {
    super(`No route for ${method} ${path}`);
  }
}

export class ConflictError extends DomainError {
  readonly statusCode = 409;
}

export class ChainExistsError extends ConflictError {
  constructor(chainName: string) {
    super(`Chain '${chainName}' already exists`);
  }
}

/** 409: a request with the same Idempotency-Key is still being appended. */
export class IdempotencyKeyInUseError extends ConflictError {
  constructor() {
    super('A request with this Idempotency-Key is still in progress; retry once it has finished');
  }
}

/** 410: what was asked for existed and was destroyed on purpose (a data subject's erased data). */
export class GoneError extends DomainError {
  readonly statusCode = 410;
}

export class PayloadTooLargeError extends DomainError {
  readonly statusCode = 413;
}

export class UnsupportedMediaTypeError extends DomainError {
  readonly statusCode = 415;
}

/** 422: the request was understood but its content is not acceptable. */
export class ValidationError extends DomainError {
  readonly statusCode = 422;
  readonly issues: ValidationIssue[];
  constructor(issues: ValidationIssue[]) {
    super(issues.map((i) => `${i.loc.join('.')}: ${i.msg}`).join('; '));
    this.issues = issues;
  }

  static single(loc: (string | number)[], msg: string, type = 'value_error'): ValidationError {
    return new ValidationError([{ loc, msg, type }]);
  }
}

/** 422 with a plain message (for rules that are not about one field's shape). */
export class UnprocessableError extends DomainError {
  readonly statusCode = 422;
}

/**
 * 422: the request read more items from DynamoDB than one request may (SVC_MAX_READ_ITEMS). What it asked for is
 * too much for one answer: a smaller page, a narrower range or fewer fields is.
 */
export class ReadLimitExceededError extends UnprocessableError {
  readonly maxItems: number;
  constructor(maxItems: number) {
    super(
      `This request reads more than ${maxItems} items from storage, the most one request may; ask for less in one request (a smaller limit, a narrower range or fewer fields) and page through the rest`,
    );
    this.maxItems = maxItems;
  }
}

/**
 * 422: the answer is larger than one answer can carry (a Lambda response's 6 MB, as Lambda counts it). Past it
 * Lambda fails the invocation and API Gateway answers a bare 500: this says what happened and what to do instead.
 */
export class AnswerTooLargeError extends UnprocessableError {
  constructor(bytes: number, maxBytes: number) {
    super(
      `This answer would be ${bytes} bytes, more than one answer can carry (${maxBytes}); ask for less in one request (a smaller limit, a narrower range or fewer fields) and page through the rest`,
    );
  }
}

/**
 * 422: the off-chain payloads a request would put in its answer (`resolve_cid`) come to more than one answer can
 * carry. Said as soon as the payloads opened pass it, before the rest are fetched and decrypted.
 */
export class ResolvedPayloadsTooLargeError extends UnprocessableError {
  constructor(maxBytes: number) {
    super(
      `The off-chain payloads this request resolves come to more than ${maxBytes} bytes, more than one answer can carry; resolve fewer events in one request (a smaller limit) and page through the rest`,
    );
  }
}

/** 422: an Idempotency-Key sent again with a different request. */
export class IdempotencyKeyReusedError extends UnprocessableError {
  constructor() {
    super('This Idempotency-Key was already used with a different request; use a new key for a new request');
  }
}

/** 503: retrying later is expected to work. */
export class ServiceUnavailableError extends DomainError {
  readonly statusCode = 503;
  constructor(message: string, retryAfterSeconds: number, options?: { cause?: unknown }) {
    super(message, options);
    this.headers['Retry-After'] = String(Math.max(1, Math.ceil(retryAfterSeconds)));
  }

  /** 503 messages are safe to show: they name the dependency, never its error text. */
  override get expose(): boolean {
    return true;
  }
}

/** A chain was too contended to append now; nothing was written for this event. */
export class ChainContendedError extends ServiceUnavailableError {
  constructor(chainName: string, attempts: number) {
    super(`Chain '${chainName}' is too busy to append now (${attempts} attempts); retry later`, 1);
  }
}

/** A client asked for a witnessed checkpoint covering blocks no witness has cosigned yet. */
export class NotWitnessedYetError extends ServiceUnavailableError {
  constructor(chainName: string, needed: number, cosigned: number | undefined) {
    super(
      cosigned === undefined
        ? `No checkpoint of '${chainName}' is cosigned by its witnesses yet; retry later`
        : `The latest checkpoint of '${chainName}' its witnesses cosigned has ${cosigned} blocks, not ${needed}; retry later`,
      1,
    );
  }

  /** A witnessed read of a block appended a moment ago: the client retries, as documented. */
  override get expected(): boolean {
    return true;
  }
}

/**
 * DynamoDB (or another dependency) did not answer; the message names it, never its error text.
 * `notApplied`: the request certainly changed nothing (no attempt of it reached the dependency, or the
 * dependency refused each one with a definite answer), so a write that failed so needs no settling.
 */
export class DependencyUnavailableError extends ServiceUnavailableError {
  readonly notApplied: boolean;
  constructor(dependency: string, options?: { cause?: unknown; notApplied?: boolean }) {
    super(`${dependency} is unavailable; retry later`, 2, options);
    this.notApplied = options?.notApplied ?? false;
  }
}

/**
 * The invocation reached its deadline (shared/deadline.ts) while waiting for something: a dependency that
 * did not answer in time, a lease, a receipt. Nothing half-written is left: writes are conditional and the
 * caller may retry (with an Idempotency-Key, an append is never applied twice).
 */
export class DeadlineExceededError extends ServiceUnavailableError {
  readonly waitingFor?: string;
  constructor(waitingFor?: string, options?: { cause?: unknown }) {
    super(`The request ran out of time${waitingFor ? ` waiting for ${waitingFor}` : ''}; retry later`, 2, options);
    this.waitingFor = waitingFor;
  }
}

/**
 * 500: an append whose outcome could not be settled before answering: it may have been written, and the
 * service could neither withdraw it (so that it never lands) nor find it sealed, DynamoDB failing both
 * (docs/appending.md, "Retries"). Like API Gateway's bare 500 for a stopped instance, it promises nothing
 * either way: a retry with the same Idempotency-Key lands it at most once. Never a 503, which promises the
 * append did not land and never will.
 */
export class OutcomeUnknownError extends DomainError {
  readonly statusCode = 500;
  constructor(chainName: string, options?: { cause?: unknown }) {
    super(`The outcome of an append to '${chainName}' could not be settled`, options);
  }
}

/** 401: no key, or a key the service does not know (docs/rules.md, "Errors" and "Keys and limits"). */
export class UnauthorizedError extends DomainError {
  readonly statusCode = 401;
  constructor(message: string, headerName: string) {
    super(message);
    this.headers['WWW-Authenticate'] = `ApiKey header="${headerName}"`;
  }
}

/** 403: a valid key whose role does not allow the operation. */
export class ForbiddenError extends DomainError {
  readonly statusCode = 403;
}

/** 429: over the rate limit; `Retry-After` says when to come back. */
export class TooManyRequestsError extends DomainError {
  readonly statusCode = 429;
  constructor(retryAfterSeconds: number) {
    super(`Rate limit exceeded; retry in ${Math.max(1, Math.ceil(retryAfterSeconds))} s`);
    this.headers['Retry-After'] = String(Math.max(1, Math.ceil(retryAfterSeconds)));
  }
}

/**
 * 422: an off-chain payload cannot be read — not in IPFS, not an envelope, altered, or wrapped under a key
 * this service cannot unwrap. On resolve it becomes the event's `resolve_error` instead of failing a page.
 */
export class UnreadablePayloadError extends DomainError {
  readonly statusCode = 422;
}

/** 422: a payload's reference is malformed (not a CID, a nonce not 24 hex): said as it is, since it tells nothing stored. */
export class MalformedPayloadReferenceError extends UnreadablePayloadError {}

/**
 * What a writer citing a payload it cannot read is told, whatever the reason (not in IPFS, another scope's, a wrong
 * nonce, altered): one answer, so that citing a CID tells nobody whether a payload they may not read exists (red team).
 */
export const UNREADABLE_CITATION = 'no payload this key may read is stored under that CID and nonce';

/** The 422 a write answers for a cited payload that cannot be read (`what`: the field cited). */
export function citationError(what: string, error: UnreadablePayloadError): UnprocessableError {
  const reason = error instanceof MalformedPayloadReferenceError ? error.message : UNREADABLE_CITATION;
  return new UnprocessableError(`${what} cannot be fetched and decrypted: ${reason}`, { cause: error });
}

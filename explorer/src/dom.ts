export function $<T extends HTMLElement = HTMLElement>(selector: string): T {
  const element = document.querySelector<T>(selector);
  if (!element) throw new Error(`No element ${selector}`);
  return element;
}

export function text(selector: string, value: string): void {
  $(selector).textContent = value;
}

type Props<K extends keyof HTMLElementTagNameMap> = Partial<Omit<HTMLElementTagNameMap[K], 'dataset'>> & { dataset?: Record<string, string> };

export function element<K extends keyof HTMLElementTagNameMap>(tag: K, props: Props<K> = {}, ...children: (Node | string)[]): HTMLElementTagNameMap[K] {
  const { dataset, ...rest } = props;
  const node = Object.assign(document.createElement(tag), rest);
  Object.assign(node.dataset, dataset);
  node.append(...children);
  return node;
}

export function showError(error: unknown): void {
  const box = $('#error');
  box.textContent = error instanceof Error ? error.message : String(error);
  box.hidden = false;
}

export function clearError(): void {
  $('#error').hidden = true;
}

export const short = (hash: string | null | undefined) => (hash ? `${hash.slice(0, 10)}…${hash.slice(-6)}` : '—');

// The agent's text as Markdown, rendered safely: raw HTML in the text is shown as text (escaped),
// links keep only http(s), mailto and relative targets, and images become links (the console loads
// nothing from elsewhere). The result is the only HTML the console inserts.

import { Marked } from "marked";

const marked = new Marked({
  gfm: true,
  breaks: true,
  async: false,
  renderer: {
    html({ text }) {
      return escapeHtml(text);
    },
    link({ href, title, tokens }) {
      const text = this.parser.parseInline(tokens);
      if (!isSafeUrl(href)) return text;
      const t = title ? ` title="${escapeHtml(title)}"` : "";
      return `<a href="${escapeHtml(href)}"${t} rel="noopener noreferrer nofollow" target="_blank">${text}</a>`;
    },
    image({ href, text }) {
      if (!isSafeUrl(href)) return escapeHtml(text);
      return `<a href="${escapeHtml(href)}" rel="noopener noreferrer nofollow" target="_blank">${escapeHtml(text || href)}</a>`;
    },
  },
});

export function renderMarkdown(text: string): string {
  return marked.parse(text, { async: false });
}

function isSafeUrl(href: string): boolean {
  const trimmed = href.trim().toLowerCase();
  if (/^(https?:|mailto:)/.test(trimmed)) return true;
  // Relative: no scheme at all (a colon before any slash, ? or # would be a scheme).
  return !/^[^/?#]*:/.test(trimmed);
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

// Markdown → safe DOM. Raw HTML in a model's answer is shown as text (never parsed), then the
// HTML marked produced is sanitized again by DOMPurify: no scripts, no event handlers, links
// only to http(s)/mailto, opened in a new tab without a referrer.
import { marked } from "./vendor/marked.esm.js";
import DOMPurify from "./vendor/purify.es.mjs";

const escapeHtml = (s) =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

marked.use({
  gfm: true,
  breaks: true,
  renderer: {
    html(token) { return escapeHtml(token.raw ?? token.text ?? ""); },
  },
});

const SAFE_URL = /^(?:https?:|mailto:|#|\/(?!\/))/i;

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    const href = node.getAttribute("href") || "";
    if (!SAFE_URL.test(href)) node.removeAttribute("href");
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer nofollow");
  }
  if (node.tagName === "IMG") {
    const src = node.getAttribute("src") || "";
    if (!/^(?:https?:|data:image\/)/i.test(src)) node.removeAttribute("src");
  }
});

const PURIFY = {
  ALLOWED_URI_REGEXP: /^(?:(?:https?|mailto):|[^a-z]|[a-z+.-]+(?:[^a-z+.\-:]|$))/i,
  FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "iframe", "svg", "math"],
  FORBID_ATTR: ["style"],
  RETURN_DOM_FRAGMENT: true,
};

export function renderMarkdown(text) {
  const html = marked.parse(String(text ?? ""), { async: false });
  return DOMPurify.sanitize(html, PURIFY);
}

export function setMarkdown(el, text) {
  el.replaceChildren(renderMarkdown(text));
}

// The same, as an HTML string (for the A2UI renderer, which takes markdown as a string).
export function renderMarkdownHtml(text) {
  const html = marked.parse(String(text ?? ""), { async: false });
  return DOMPurify.sanitize(html, { ...PURIFY, RETURN_DOM_FRAGMENT: false });
}

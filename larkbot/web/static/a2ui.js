// ui_card's A2UI on the page, drawn by the official A2UI Lit renderer (static/vendor/a2ui-lit.js,
// built by `make web-vendor`) with the basic catalog, as A2UI v0.9 publishes it. Its Text is
// larkbot's own element so text goes through the sanitizing markdown renderer.
import {
  A2uiSurface, BasicCatalogA2uiLitElement, Catalog, MessageProcessor, TextApi, basicCatalog, html,
  markdown, nothing,
} from "./vendor/a2ui-lit.js";
import { renderMarkdownHtml } from "./markdown.js";

const HEADING = {
  h1: (cls, text) => html`<h1 class=${cls}>${text}</h1>`,
  h2: (cls, text) => html`<h2 class=${cls}>${text}</h2>`,
  h3: (cls, text) => html`<h3 class=${cls}>${text}</h3>`,
  h4: (cls, text) => html`<h4 class=${cls}>${text}</h4>`,
  h5: (cls, text) => html`<h5 class=${cls}>${text}</h5>`,
};
const HEADINGS = new Set(Object.keys(HEADING));

function setWeight(host, weight) {
  // through CSSOM: the page's CSP forbids style attributes, which Lit's `style=` would set
  const inner = host.firstElementChild;
  if (inner) inner.style.flex = typeof weight === "number" ? `${weight} 1 0` : "";
}

// The basic catalog's Text: headings and captions as text, the rest as sanitized markdown.
class LarkbotText extends BasicCatalogA2uiLitElement {
  constructor() { super(); this.api = TextApi; }
  render() {
    const props = this.controller.props;
    if (!props) return nothing;
    const variant = props.variant || "body";
    const text = String(props.text ?? "");
    const cls = `a2ui-text ${variant}`;
    if (HEADINGS.has(variant)) return HEADING[variant](cls, text);
    if (variant === "caption") return html`<em class=${cls}>${text}</em>`;
    return html`<span class=${cls}>${markdown(text, renderMarkdownHtml)}</span>`;
  }
  updated() { setWeight(this, this.controller.props?.weight); }
}
customElements.define("larkbot-text", LarkbotText);

const BASIC = [...basicCatalog.components.values()];
const COMPONENTS = BASIC.map((api) => (api.name === "Text" ? { ...TextApi, tagName: "larkbot-text" } : api));
const CATALOGS = [new Catalog(basicCatalog.id, COMPONENTS, [...basicCatalog.functions.values()])];

// The official surface, drawn in the page's DOM (not a shadow root) so the page's styles apply.
class LarkbotSurface extends A2uiSurface {
  createRenderRoot() { return this; }
}
customElements.define("larkbot-a2ui-surface", LarkbotSurface);

// One processor per page: messages may create, update and delete surfaces over time.
export class A2uiProcessor {
  constructor() {
    this.processor = new MessageProcessor(CATALOGS);
    this.surfaces = new Map();
    this.created = [];
    this.shown = 0;
    this.processor.onSurfaceCreated((surface) => {
      const el = new LarkbotSurface();
      el.className = "a2ui-surface";
      el.dataset.surfaceId = surface.id;
      el.surface = surface;
      this.surfaces.set(surface.id, el);
      this.created.push(el);
    });
    this.processor.onSurfaceDeleted((id) => {
      this.surfaces.get(id)?.remove();
      this.surfaces.delete(id);
    });
  }

  // Applies one ui_card's A2UI messages; returns the elements of the surfaces they created and
  // the error of the first invalid message (the renderer validates each against the catalog).
  process(messages) {
    this.created = [];
    let error = null;
    for (const message of this.renamed(messages || [])) {
      try { this.processor.processMessages([message]); } catch (e) { error = error || e; }
    }
    return { created: this.created, error };
  }

  // The same card asked twice has the same surface id (ui_card derives it from the content);
  // each showing gets its own surface, so the batch's repeated ids are renamed.
  renamed(messages) {
    const alias = new Map();
    for (const m of messages) {
      const id = m && m.createSurface && m.createSurface.surfaceId;
      if (id && this.surfaces.has(id)) alias.set(id, `${id}~${++this.shown}`);
    }
    if (!alias.size) return messages;
    return messages.map((m) => {
      const key = m && ["createSurface", "updateComponents", "updateDataModel", "deleteSurface"].find((k) => m[k]);
      const id = key && m[key].surfaceId;
      return alias.has(id) ? { ...m, [key]: { ...m[key], surfaceId: alias.get(id) } } : m;
    });
  }
}

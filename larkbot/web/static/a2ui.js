// A small renderer of A2UI v0.9 surfaces: the basic catalog's display components plus larkbot's
// Timeline extension and the rankBadge Text variant (what ui_card's templates emit). Everything
// is built with DOM calls; text goes through the sanitizing markdown renderer, never innerHTML.
import { setMarkdown } from "./markdown.js";

function resolve(value, model) {
  if (value == null) return "";
  if (typeof value === "string" || typeof value === "number") return String(value);
  if (typeof value === "object" && typeof value.path === "string") {
    let node = model;
    for (const part of value.path.split("/").filter(Boolean)) node = node == null ? node : node[part];
    return node == null ? "" : String(node);
  }
  if (typeof value === "object" && "literalString" in value) return String(value.literalString);
  return "";
}

function el(tag, cls) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  return node;
}

const TEXT_TAGS = { h1: "h1", h2: "h2", h3: "h3", h4: "h4", h5: "h5" };

class Surface {
  constructor(id, catalogId) {
    this.id = id;
    this.catalogId = catalogId;
    this.components = new Map();
    this.model = {};
    this.root = el("div", "a2ui-surface");
    this.root.dataset.surfaceId = id;
  }

  render() {
    this.root.replaceChildren();
    if (this.components.has("root")) this.root.append(this.build("root", new Set()));
  }

  children(comp) {
    const kids = comp.children;
    if (Array.isArray(kids)) return kids;
    if (kids && Array.isArray(kids.explicitList)) return kids.explicitList;
    return [];
  }

  build(id, seen) {
    const comp = this.components.get(id);
    if (!comp || seen.has(id)) return el("span");
    seen = new Set(seen).add(id);
    const kids = () => this.children(comp).map((c) => this.build(c, seen));
    let node;
    switch (comp.component) {
      case "Text": {
        const variant = comp.variant || "body";
        if (variant === "rankBadge") {
          node = el("span", "a2ui-rank-badge");
          node.textContent = resolve(comp.text, this.model);
        } else {
          node = el(TEXT_TAGS[variant] || "div", `a2ui-text a2ui-${variant}`);
          setMarkdown(node, resolve(comp.text, this.model));
        }
        break;
      }
      case "Row":
        node = el("div", "a2ui-row");
        if (comp.align) node.dataset.align = comp.align;
        node.append(...kids());
        break;
      case "Column":
      case "List":
        node = el("div", comp.component === "List" ? "a2ui-list" : "a2ui-column");
        if (comp.align) node.dataset.align = comp.align;
        node.append(...kids());
        break;
      case "Card":
        node = el("div", "a2ui-card");
        if (comp.child) node.append(this.build(comp.child, seen));
        node.append(...kids());
        break;
      case "Divider":
        node = el("hr", "a2ui-divider");
        break;
      case "Image": {
        node = el("img", "a2ui-image");
        const url = resolve(comp.url, this.model);
        if (/^(https?:|data:image\/)/i.test(url)) node.src = url;
        node.alt = resolve(comp.description || comp.alt, this.model);
        break;
      }
      case "Icon":
        node = el("span", "a2ui-icon");
        node.textContent = resolve(comp.name, this.model);
        break;
      case "Button":
        node = el("button", "a2ui-button");
        node.type = "button";
        node.disabled = true; // actions are not wired on this page
        if (comp.child) node.append(this.build(comp.child, seen));
        break;
      case "Tabs": {
        node = el("div", "a2ui-tabs");
        for (const tab of comp.tabs || comp.tabItems || []) {
          const box = el("details", "a2ui-tab");
          const title = el("summary");
          title.textContent = resolve(tab.title, this.model);
          box.append(title, this.build(tab.child, seen));
          node.append(box);
        }
        node.querySelector("details")?.setAttribute("open", "");
        break;
      }
      case "Timeline": {
        node = el("ol", "a2ui-timeline");
        for (const item of comp.items || []) {
          const li = el("li");
          const time = el("span", "a2ui-timeline-time");
          time.textContent = resolve(item.time, this.model);
          const title = el("div", "a2ui-timeline-title");
          setMarkdown(title, resolve(item.title, this.model));
          li.append(time, title);
          if (item.description) {
            const detail = el("div", "a2ui-timeline-detail");
            setMarkdown(detail, resolve(item.description, this.model));
            li.append(detail);
          }
          node.append(li);
        }
        break;
      }
      default: {
        // inputs and anything unknown: show their label/value as plain text
        node = el("div", "a2ui-unknown");
        node.textContent = resolve(comp.label || comp.text || comp.value, this.model);
      }
    }
    if (comp.weight) node.style.flex = `${Number(comp.weight) || 1} 1 0`;
    node.dataset.componentId = id;
    return node;
  }
}

// One processor per page: messages may create, update and delete surfaces over time.
export class A2uiProcessor {
  constructor() { this.surfaces = new Map(); }

  // Apply messages; returns surfaces created by them (for the caller to place in the page).
  process(messages) {
    const created = [];
    const touched = new Set();
    for (const msg of messages || []) {
      if (msg.createSurface) {
        const { surfaceId, catalogId } = msg.createSurface;
        const surface = new Surface(surfaceId, catalogId);
        this.surfaces.set(surfaceId, surface);
        created.push(surface);
        touched.add(surface);
      } else if (msg.updateComponents) {
        const surface = this.surfaces.get(msg.updateComponents.surfaceId);
        if (!surface) continue;
        for (const comp of msg.updateComponents.components || []) surface.components.set(comp.id, comp);
        touched.add(surface);
      } else if (msg.updateDataModel) {
        const surface = this.surfaces.get(msg.updateDataModel.surfaceId);
        if (!surface) continue;
        const { path, value } = msg.updateDataModel;
        if (!path || path === "/") surface.model = value ?? {};
        else {
          const parts = path.split("/").filter(Boolean);
          let node = surface.model;
          for (const p of parts.slice(0, -1)) node = node[p] = node[p] ?? {};
          node[parts[parts.length - 1]] = value;
        }
        touched.add(surface);
      } else if (msg.deleteSurface) {
        const surface = this.surfaces.get(msg.deleteSurface.surfaceId);
        surface?.root.remove();
        this.surfaces.delete(msg.deleteSurface.surfaceId);
      }
    }
    for (const surface of touched) surface.render();
    return created.map((s) => s.root);
  }
}

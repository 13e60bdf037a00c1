// The parts of the official A2UI Lit renderer (and of Lit, Lit context and Zod it runs on) that
// larkbot/web/static/a2ui.js uses, bundled into one ES module: static/vendor/a2ui-lit.js.
export { html, nothing } from "lit";
export { LitElement } from "lit";
export { ContextProvider } from "@lit/context";
export { z } from "zod";
export { MessageProcessor, Catalog, CommonSchemas } from "@a2ui/web_core/v0_9";
export {
  BASIC_FUNCTIONS,
  BasicCatalogA2uiLitElement,
  Context,
  TextApi,
  basicCatalog,
  markdown,
} from "@a2ui/web_core/v0_9/basic_catalog";
export { A2uiSurface } from "@a2ui/lit/v0_9";

// The empty chat's first screen: a few example prompts, in the page's language, sent on a click.
import { label } from "./i18n.js";
import { $, node } from "./dom.js";

const EXAMPLES = ["example1", "example2", "example3", "example4"];

export function showExamples(send) {
  hideExamples();
  const box = node("div", "examples");
  box.id = "examples";
  box.append(label("p", "examples-title", "examplesTitle"));
  const list = node("div", "example-list");
  for (const key of EXAMPLES) {
    const b = label("button", "example", key);
    b.type = "button";
    b.addEventListener("click", () => send(b.textContent));
    list.append(b);
  }
  box.append(list);
  $("messages").append(box);
}

export function hideExamples() {
  const box = $("examples");
  if (box) box.remove();
}

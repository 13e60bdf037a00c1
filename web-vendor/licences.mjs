// Prints the licence of every npm package esbuild put into the bundle (from its metafile), so
// the vendored file ships with the notices of all the code it contains.
import { readFileSync, readdirSync } from "node:fs";

const meta = JSON.parse(readFileSync(process.argv[2], "utf8"));
const packages = new Set();
for (const input of Object.keys(meta.inputs)) {
  const m = input.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\//);
  if (m) packages.add(m[1]);
}
for (const name of [...packages].sort()) {
  const dir = `node_modules/${name}`;
  const pkg = JSON.parse(readFileSync(`${dir}/package.json`, "utf8"));
  const file = readdirSync(dir).find((f) => /^licen[cs]e/i.test(f));
  if (!file) throw new Error(`${name} has no licence file`);
  process.stdout.write(`==== ${name} ${pkg.version} (${pkg.license}) ====\n\n`);
  process.stdout.write(readFileSync(`${dir}/${file}`, "utf8").trim() + "\n\n");
}

// Small helpers the page's modules share: element lookup and creation, and the API call that
// sends the session cookie and turns a 401 into the login screen.
export const $ = (id) => document.getElementById(id);

export function node(tag, cls, text) {
  const n = document.createElement(tag);
  if (cls) n.className = cls;
  if (text != null) n.textContent = text;
  return n;
}

export function showLogin() { $("login").hidden = false; $("token").focus(); }

export async function api(method, path, body) {
  const opts = { method, headers: {}, credentials: "same-origin" };
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const resp = await fetch(path, opts);
  if (resp.status === 401) { showLogin(); throw new Error("unauthorized"); }
  return resp;
}

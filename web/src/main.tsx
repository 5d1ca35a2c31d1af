// The web console's entry point: the app, rendered into index.html's #app.

import { render } from "preact";
import { App } from "./components/app";
import { takeCallback } from "./sign-in";
import "./console.css";

// First of all: a sign-in callback's code and state leave the address bar (and so the history).
const callback = takeCallback();
const root = document.getElementById("app");
if (root) {
  root.replaceChildren();
  render(<App callback={callback} />, root);
}

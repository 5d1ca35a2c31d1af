// The web console's entry point: the app, rendered into index.html's #app.

import { render } from "preact";
import { App } from "./components/app";
import "./console.css";

const root = document.getElementById("app");
if (root) {
  root.replaceChildren();
  render(<App />, root);
}

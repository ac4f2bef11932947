import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./App";
import { startLinkSync } from "./state/linkSync";
import "./styles.css";
import { startNavigation } from "./views/workspace/store";

const root = document.getElementById("root");
if (root) {
  createRoot(root).render(
    <StrictMode>
      <App />
    </StrictMode>,
  );
  startLinkSync();
  startNavigation();
}

import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// Relative asset paths: the built app (dist/) can be served from any folder.
// The AI SDK and AG-UI client weigh ~700 kB minified; one chunk is fine for an example.
export default defineConfig({
  base: "./",
  plugins: [react()],
  build: { chunkSizeWarningLimit: 1000 },
});

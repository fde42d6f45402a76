// Vite config: the build lands in dist/ (CMake passes --outDir) and is
// embedded into the coordinator; `npm run dev` proxies the API to a running
// coordinator (SMOE_DASHBOARD, default http://127.0.0.1:8080).
import { defineConfig } from 'vite';

const target = process.env.SMOE_DASHBOARD || 'http://127.0.0.1:8080';

export default defineConfig({
  base: '/',
  build: {
    outDir: 'dist',
    assetsDir: 'assets',
    sourcemap: false,
    chunkSizeWarningLimit: 400,
  },
  server: {
    proxy: {
      '/api': { target, changeOrigin: false },
      '/login': { target },
      '/logout': { target },
    },
  },
});

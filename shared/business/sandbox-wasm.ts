/** Where the contract sandbox's WebAssembly comes from, and the name it has beside a bundle. */
export const QUICKJS_WASM_FILE = 'quickjs.wasm';
export const QUICKJS_WASM_MODULE = '@jitl/quickjs-wasmfile-release-sync/wasm';

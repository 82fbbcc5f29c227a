/**
 * `gitport/node`: the Node-only entry point (Node's fs adapter and opening repositories on disk).
 */
export { nodeFs } from './fs.node.js';

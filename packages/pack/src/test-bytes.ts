/** Byte helpers shared by the package's tests. */
export { concatBytes as concat } from './object.js';

export { Capabilities, type Capability, DEFAULT_AGENT, formatCapability } from './capabilities.js';
export { hasCode, ProtocolError } from './errors.js';
export {
  assertValidRefName,
  compareRefNames,
  isObjectId,
  isValidRefName,
  MemoryRefStore,
  type ObjectId,
  type Ref,
  type RefRejection,
  type RefStore,
  type RefUpdate,
  type RefUpdateResult,
  type RefValue,
  ZERO_OID,
} from './ref-store.js';

/**
 * `@gitport/pack/zero-id`: the id that stands for no object, 40 zeros, as git writes it for the
 * old side of a ref being created and the new side of one being deleted (push commands, ref
 * updates). A module that imports nothing, and an entry of its own, so that a process that only
 * names it (the gateway's main thread, through `gitport/wire`) loads no other module of the
 * package.
 */
export const ZERO_ID: string = '0'.repeat(40);

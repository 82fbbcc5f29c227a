/**
 * The layer table of DESIGN.md: a package imports only packages in lower layers.
 *   1 bus, pktline   2 transport, pack   3 protocol   4 gitport   5 gateway   6 cli
 * Plus: no cycles, and Node built-ins only in *.node.ts files, tests, gateway and cli; in gateway,
 * only under src/node/ (the @gitport/gateway/node entry), so its main entry stays web-only.
 */
const layers = [['bus', 'pktline'], ['transport', 'pack'], ['protocol'], ['gitport'], ['gateway'], ['cli']];

const sameOrHigher = (level) => layers.slice(level).flat();

/** A package's files, whether resolved to its sources, through node_modules, or left unresolved. */
const forbiddenTargets = (names) => {
  const group = names.join('|');
  const packageNames = names.map((n) => (n === 'gitport' ? 'gitport' : `@gitport/${n}`)).join('|');
  return `^packages/(${group})/|node_modules/(${packageNames})/|^(${packageNames})$`;
};

/** The gateway's files its main entry may reach: all but the `./node` entry and its folder (and tests). */
const gatewayWeb = {
  path: '^packages/gateway/src/',
  pathNot: ['^packages/gateway/src/node(/|\\.ts$)', '\\.test\\.ts$', '/test-[^/]*\\.ts$'],
};

const layerRules = layers.flatMap((names, level) =>
  names.map((name) => ({
    name: `layer-${name}`,
    comment: `${name} (layer ${level + 1}) may import only packages in lower layers`,
    severity: 'error',
    from: { path: `^packages/${name}/` },
    to: { path: forbiddenTargets(sameOrHigher(level).filter((other) => other !== name)) },
  })),
);

module.exports = {
  forbidden: [
    ...layerRules,
    {
      name: 'no-circular',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'every import resolves (a package imports only what it declares)',
      severity: 'error',
      from: { path: '^packages/' },
      to: { couldNotResolve: true },
    },
    {
      name: 'node-builtins-only-at-node-edges',
      comment: 'only *.node.ts files, tests, gateway and cli import Node built-ins',
      severity: 'error',
      from: {
        path: '^packages/(pktline|bus|transport|pack|protocol|gitport)/src/',
        pathNot: ['\\.node\\.ts$', '\\.test\\.ts$', '/test-[^/]*\\.ts$'],
      },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'gateway-main-entry-no-node-builtins',
      comment: '@gitport/gateway runs wherever a fetch handler runs: Node built-ins only under src/node/',
      severity: 'error',
      from: gatewayWeb,
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'gateway-main-entry-no-node-modules',
      comment: "@gitport/gateway's web files import neither its Node files nor another package's Node entry",
      severity: 'error',
      from: gatewayWeb,
      to: { path: ['^packages/gateway/src/node(/|\\.ts$)', '^packages/[^/]+/src/node\\.ts$', '\\.node\\.ts$'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)dist/' },
    tsPreCompilationDeps: true,
    combinedDependencies: false,
    preserveSymlinks: false,
    tsConfig: { fileName: 'tsconfig.base.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['source', 'import', 'node', 'default'],
      extensions: ['.ts', '.js', '.json'],
      mainFields: ['module', 'main'],
    },
  },
};

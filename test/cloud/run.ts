/**
 * `npm run check:cloud`: test/cloud/*.test.ts (cdk-nag on the template; the synthesized template served by `npm run
 * sim`, its calls held to the roles) with node's test runner, one file at a time, on Lambda's Node (24): typed on an
 * older Node, it starts itself again there (test/support/lambda-node.ts).
 */
import { onLambdasNode, runTestFolder } from '../support/lambda-node.ts';

await onLambdasNode('check:cloud');
process.exit(runTestFolder('cloud'));

/** Prints the Node it ends up on after test/support/lambda-node.ts's move (test/unit/test-runner-node.test.ts). */
import { onLambdasNode } from './lambda-node.ts';

await onLambdasNode('print-node');
process.stdout.write(`node ${process.version}\n`);

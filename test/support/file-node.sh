#!/bin/sh
# The Node a test file runs on. node:test starts each file as `<process.execPath> [flags] <file>`, and test/run.ts
# points process.execPath here: a file named in LEDGER_TEST_LAMBDA_FILES runs on LEDGER_TEST_LAMBDA_NODE (Lambda's
# Node), every other command on LEDGER_TEST_HOST_NODE (the Node that started the run). `exec`: the pid stays the
# file's, so its deadline, its CPU and its stop still reach it.
for arg; do
  case " $LEDGER_TEST_LAMBDA_FILES " in
    *" $arg "*) exec "$LEDGER_TEST_LAMBDA_NODE" "$@" ;;
  esac
done
exec "$LEDGER_TEST_HOST_NODE" "$@"

/**
 * The stack's real-time part (docs/rules.md, "WebSocket"): the WebSocket API with its three routes to one function,
 * and the broadcaster, which reads the ledger table's stream and pushes each new block to the connections through
 * the management API (the only function allowed to; the ws function may only ask whether a connection is still there).
 * Answers the API's stage, whose URL the explorer is told.
 */
import { Aws, type CfnElement, Duration, type Stack, Validations } from 'aws-cdk-lib';
import { WebSocketApi, WebSocketStage } from 'aws-cdk-lib/aws-apigatewayv2';
import { WebSocketLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type { TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { EventSourceMapping, type Function as LambdaFunctionResource, StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { EVENT_FUNCTIONS, type GroupSpec } from '../routes.ts';
import type { FunctionName } from './permissions.ts';

/** The WebSocket API's: messages per second and burst (each connection is also limited by the ws function, SVC_WS_MESSAGES_PER_SECOND). */
export const WEBSOCKET_THROTTLE = { rateLimit: 500, burstLimit: 250 } as const;

/** How the stack makes a function (ledger-stack.ts): its own role, logs and table grants. */
export type MakeFunction = (
  name: FunctionName,
  spec: Pick<GroupSpec, 'entry' | 'tables' | 'usesKmsKey' | 'usesIpfs' | 'bundleFiles'>,
  extraEnv?: Record<string, string>,
) => LambdaFunctionResource;

export function realtime(scope: Stack, { makeFunction, ledgerTable }: { makeFunction: MakeFunction; ledgerTable: TableV2 }): WebSocketStage {
  // WebSocket (docs/rules.md, "WebSocket"): the API's three routes to one function; $default answers as the route's response.
  const wsFunction = makeFunction('ws', EVENT_FUNCTIONS.ws);
  const wsIntegration = (id: string) => new WebSocketLambdaIntegration(id, wsFunction);
  const webSocketApi = new WebSocketApi(scope, 'WebSocketApi', {
    connectRouteOptions: { integration: wsIntegration('WsConnect') },
    disconnectRouteOptions: { integration: wsIntegration('WsDisconnect') },
    defaultRouteOptions: { integration: wsIntegration('WsDefault'), returnResponse: true },
  });
  const wsStage = new WebSocketStage(scope, 'WebSocketStage', {
    webSocketApi,
    stageName: 'live',
    autoDeploy: true,
    throttle: { rateLimit: WEBSOCKET_THROTTLE.rateLimit, burstLimit: WEBSOCKET_THROTTLE.burstLimit },
  });
  Validations.of(wsStage).acknowledge(
    ...['AwsSolutions::AwsSolutions-APIG1', 'Serverless::Serverless-APIGWAccessLogging'].map((id) => ({
      id,
      reason:
        "A WebSocket API's access logs need API Gateway's account-wide CloudWatch Logs role (AWS::ApiGateway::Account), a " +
        'singleton this stack must not take over in the account; the ws function logs each connection, and every route that fails, itself.',
    })),
  );

  // The ws function asks the management API whether the holders of a key's connection slots are still connected, when
  // all are held ($disconnect is best-effort): GET on a connection of this stage, nothing else.
  wsFunction.addEnvironment('SVC_WS_MANAGEMENT_ENDPOINT', wsStage.callbackUrl);
  wsFunction.addToRolePolicy(
    new PolicyStatement({
      actions: ['execute-api:ManageConnections'],
      resources: [`arn:${Aws.PARTITION}:execute-api:${Aws.REGION}:${Aws.ACCOUNT_ID}:${webSocketApi.apiId}/${wsStage.stageName}/GET/@connections/*`],
    }),
  );
  Validations.of(wsFunction.role!).acknowledge({
    id: `AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:execute-api:<AWS::Region>:<AWS::AccountId>:<${scope.getLogicalId(webSocketApi.node.defaultChild as CfnElement)}>/live/GET/@connections/*]`,
    reason: "Connection ids are API Gateway's, made as clients connect: GET on any connection of this API and stage (is it still there?), nothing else.",
  });

  // The broadcaster: new blocks from the ledger table's stream, pushed through the management API.
  const broadcast = makeFunction('broadcast', EVENT_FUNCTIONS.broadcast, { SVC_WS_MANAGEMENT_ENDPOINT: wsStage.callbackUrl });
  // The management API: POST to a connection of this stage (pushes), not GET or DELETE (CDK's grant allows every method).
  broadcast.addToRolePolicy(
    new PolicyStatement({
      actions: ['execute-api:ManageConnections'],
      resources: [`arn:${Aws.PARTITION}:execute-api:${Aws.REGION}:${Aws.ACCOUNT_ID}:${webSocketApi.apiId}/${wsStage.stageName}/POST/@connections/*`],
    }),
  );
  // What Lambda's event source mapping reads the stream with (the function's role): the table's streams only.
  broadcast.addToRolePolicy(
    new PolicyStatement({
      actions: ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator'],
      resources: [ledgerTable.tableStreamArn!],
    }),
  );
  // ListStreams too, which Lambda checks the role for when it creates the mapping. IAM has no resource for it
  // (a wildcard-only action): granted on the ledger table's stream ARN, as this stack once did, it grants nothing.
  broadcast.addToRolePolicy(new PolicyStatement({ actions: ['dynamodb:ListStreams'], resources: ['*'] }));
  Validations.of(broadcast.role!).acknowledge(
    {
      id: 'AwsSolutions::AwsSolutions-IAM5[Resource::*]',
      reason: 'dynamodb:ListStreams alone, which IAM grants on no resource but * (a wildcard-only action); Lambda checks the role for it.',
    },
    {
      id: `AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:execute-api:<AWS::Region>:<AWS::AccountId>:<${scope.getLogicalId(webSocketApi.node.defaultChild as CfnElement)}>/live/POST/@connections/*]`,
      reason: 'Pushes go to connections by their id, which API Gateway makes as clients connect: POST to any connection of this API and stage, nothing else.',
    },
  );
  // (The stream's records are encrypted with the key: DynamoDB decrypts them for the reader, as for the tables above.)
  const deadLetters = new Queue(scope, 'BroadcastDeadLetters', {
    retentionPeriod: Duration.days(14),
    encryption: QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
  });
  Validations.of(deadLetters).acknowledge(
    ...['AwsSolutions::AwsSolutions-SQS3', 'Serverless::Serverless-SQSRedrivePolicy'].map((id) => ({
      id,
      reason: 'It is the dead-letter queue (of the stream mapping): nothing consumes it to fail again, so it has no queue of its own behind it.',
    })),
  );
  new EventSourceMapping(scope, 'LedgerStreamToBroadcast', {
    target: broadcast,
    eventSourceArn: ledgerTable.tableStreamArn!,
    startingPosition: StartingPosition.LATEST,
    batchSize: 100,
    maxBatchingWindow: Duration.millis(0),
    bisectBatchOnError: true,
    retryAttempts: 3,
    reportBatchItemFailures: true,
    // A batch that still fails after its retries is sent to the queue, by Lambda, as the function's role:
    // sqs:SendMessage on it alone (CDK's SqsDlq would add GetQueueAttributes and GetQueueUrl, which nothing uses).
    onFailure: {
      bind: (_target, handler) => {
        handler.addToRolePolicy(new PolicyStatement({ actions: ['sqs:SendMessage'], resources: [deadLetters.queueArn] }));
        return { destination: deadLetters.queueArn };
      },
    },
  });
  return wsStage;
}

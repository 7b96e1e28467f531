/** The admin domain's records in the registry table (layout in keys.ts). */
import { DeleteCommand, GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { AdminRepository, PeerRecord } from '../admin/repository.ts';
import { IDENTITY_KEY, PEERS_PARTITION, noncePk } from './keys.ts';
import { keyCanExist, putIfAbsent, queryAll, send, writeIf } from './requests.ts';

export function createAdminRepository({ client, tableName }: { client: DynamoDBDocumentClient; tableName: string }): AdminRepository {
  const putNew = (item: Record<string, unknown>) => putIfAbsent(client, tableName, item);

  const peerFrom = ({ pk: _pk, sk: _sk, ...peer }: Record<string, unknown>) => peer as unknown as PeerRecord;

  return {
    useNonce: (signer, nonce) => putNew({ pk: noncePk(signer), sk: nonce }),
    async releaseNonce(signer, nonce) {
      await send(() => client.send(new DeleteCommand({ TableName: tableName, Key: { pk: noncePk(signer), sk: nonce } })));
    },
    putPeer: (peer) => putNew({ pk: PEERS_PARTITION, sk: peer.peer_id, ...peer }),
    async getPeer(peerId) {
      if (!keyCanExist(PEERS_PARTITION, peerId)) return undefined;
      const out = await send(() => client.send(new GetCommand({ TableName: tableName, Key: { pk: PEERS_PARTITION, sk: peerId } })));
      return out.Item ? peerFrom(out.Item) : undefined;
    },
    async listPeers() {
      const items = await queryAll(client, { TableName: tableName, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': PEERS_PARTITION } });
      return items.map(peerFrom);
    },
    async getIdentity() {
      const out = await send(() => client.send(new GetCommand({ TableName: tableName, Key: IDENTITY_KEY, ConsistentRead: true })));
      return out.Item ? String(out.Item.document) : undefined;
    },
    putIdentity: (document) => putNew({ ...IDENTITY_KEY, document }),
    replaceIdentity: (current, next) =>
      writeIf(
        client,
        new PutCommand({
          TableName: tableName,
          Item: { ...IDENTITY_KEY, document: next },
          ConditionExpression: 'document = :current',
          ExpressionAttributeValues: { ':current': current },
        }),
      ),
  };
}

/**
 * A real QLDB block, the one vector of QLDB's hashing not made by this project: the BLOCK_SUMMARY and
 * REVISION_DETAILS records of a QLDB stream kept as test fixtures by AWS's sample
 * aws-samples/amazon-qldb-streams-dmv-sample-lambda-python (tests/unit/fixtures.py, commit d4c7d40; ledger
 * vehicle-registration, block HbD9IggL584EPHmfwjmVz0/3, 2019-12-11). One edit in the fixture: its revision
 * data says FirstName "Nova", while the block's own statement inserted 'Testing new 600'; the revision hash
 * QLDB published is the hash of what was inserted, and here the data is that.
 */
const b64 = (s: string) => Buffer.from(s, 'base64');

// The block, as the stream's records give it.
export const BLOCK = {
  blockHash: b64('lu425dAWsmvzxuNHTbn4ID4mLo0bWKkjLP2Uel4wrPQ='),
  entriesHash: b64('RNGQGcOKCGLCo5S+hs1eboanNrocIzRiqzzq1s99G/Q='),
  previousBlockHash: b64('pV28aszpqJH9LOO9oMsACDmXfdzdEW7HYxzuQVIjSDU='),
  entriesHashList: [
    'LmcGQjLlfScQQxbzaoglEpXpeN9bp7I/QUk690ncEpk=',
    'vJFOcsNRM14gsIBSEnwPhMVgRAWf/4EUW5gPYbtmDv0=',
    'KXJrG8t/KePERHasyztlv4kZPol4Q2buhWmy7iJrsiY=',
    'Lz3XWBwtWyBA/Lhj+UoLhbajPQ8Mk9N4j0HJlrm2OTg=',
  ].map(b64),
  transactionInfo: `{
    statements: [{
      statement: "INSERT INTO Person <<\\n{\\n    'FirstName' : 'Testing new 600',\\n    'LastName' : 'Lewis',\\n    'DOB' : \`1963-08-19T\`,\\n    'GovId' : 'LEWISR261LL',\\n    'GovIdType' : 'Driver License',\\n    'Address' : '1719 University Street, Seattle, WA, 98109'\\n}\\n>>",
      startTime: 2019-12-11T07:20:51.223Z,
      statementDigest: {{t5wbRW+wIi/X0n3iPhFJtbt2qpzzgWkOXIFC4xJHp4o=}}
    }],
    documents: { D35qd3e2prnJYmtKW6kok1: { tableName: "Person", tableId: "1SUXCa3wwV0GD7kV78RbSg", statements: [0] } }
  }`,
  revision: {
    hash: b64('vJFOcsNRM14gsIBSEnwPhMVgRAWf/4EUW5gPYbtmDv0='),
    metadata: '{ id: "D35qd3e2prnJYmtKW6kok1", version: 0, txTime: 2019-12-11T07:20:51.245Z, txId: "0007KbqoyqAIch6XRbQ4iA" }',
    data: `{ FirstName: "Testing new 600", LastName: "Lewis", DOB: 1963-08-19T, GovId: "LEWISR261LL", GovIdType: "Driver License",
             Address: "1719 University Street, Seattle, WA, 98109" }`,
  },
};

/** The block as a journal export writes it (Ion text): its summary, with its revision in full. */
export const BLOCK_ION = `{
  blockAddress: { strandId: "HbD9IggL584EPHmfwjmVz0", sequenceNo: 3 },
  transactionId: "0007KbqoyqAIch6XRbQ4iA",
  blockTimestamp: 2019-12-11T07:20:51.261Z,
  blockHash: {{${BLOCK.blockHash.toString('base64')}}},
  entriesHash: {{${BLOCK.entriesHash.toString('base64')}}},
  previousBlockHash: {{${BLOCK.previousBlockHash.toString('base64')}}},
  entriesHashList: [${BLOCK.entriesHashList.map((h) => `{{${h.toString('base64')}}}`).join(', ')}],
  transactionInfo: ${BLOCK.transactionInfo},
  revisions: [{
    blockAddress: { strandId: "HbD9IggL584EPHmfwjmVz0", sequenceNo: 3 },
    hash: {{${BLOCK.revision.hash.toString('base64')}}},
    data: ${BLOCK.revision.data},
    metadata: ${BLOCK.revision.metadata}
  }]
}`;

/**
 * The service's routes as types, generated from its OpenAPI document by openapi-typescript.
 * Do not edit: `npm run client:types` rewrites it, and the unit tests fail when it is out of date.
 */

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

export interface paths {
    "/api/admin/chains/{chain_name}/secure-events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Append an event signed by an organization */
        post: operations["postApiAdminChainsChainNameSecureEvents"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/admin/identity": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The node id and public key */
        get: operations["getApiAdminIdentity"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/admin/ipfs/decode": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Decrypt an off-chain payload (the explorer's CID decoder) */
        post: operations["postApiAdminIpfsDecode"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/admin/peers": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List peers */
        get: operations["getApiAdminPeers"];
        put?: never;
        /** Register a peer */
        post: operations["postApiAdminPeers"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/admin/status": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Node status */
        get: operations["getApiAdminStatus"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/admin/verify-identity": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Sign a challenge with the node key */
        post: operations["postApiAdminVerifyIdentity"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/business/channels": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Create a channel (and its Sub-Chain) */
        post: operations["postApiBusinessChannels"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/business/channels/{channel_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Channel information */
        get: operations["getApiBusinessChannelsChannelId"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/business/channels/{channel_id}/organizations": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Add a member organization */
        post: operations["postApiBusinessChannelsChannelIdOrganizations"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/business/channels/{channel_id}/organizations/{org_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** Remove a member organization (admins) */
        delete: operations["deleteApiBusinessChannelsChannelIdOrganizationsOrgId"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/business/channels/{channel_id}/private-collections": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Create a private data collection */
        post: operations["postApiBusinessChannelsChannelIdPrivateCollections"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/business/contracts": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Register a contract version */
        post: operations["postApiBusinessContracts"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/business/contracts/{contract_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A contract's versions */
        get: operations["getApiBusinessContractsContractId"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/business/contracts/execute": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Execute a contract */
        post: operations["postApiBusinessContractsExecute"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/business/health": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Health check */
        get: operations["getApiBusinessHealth"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/business/organizations": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List organizations */
        get: operations["getApiBusinessOrganizations"];
        put?: never;
        /** Register an organization */
        post: operations["postApiBusinessOrganizations"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/business/organizations/{org_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One organization */
        get: operations["getApiBusinessOrganizationsOrgId"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/business/private-data": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Write private data (encrypted, off the common ledger) */
        post: operations["postApiBusinessPrivateData"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/business/private-data/{channel}/{collection}/{key}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Read private data (members and admins) */
        get: operations["getApiBusinessPrivateDataChannelCollectionKey"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/ledger/chains": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The Main Chain and the Sub-Chains, a page at a time */
        get: operations["getApiLedgerChains"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/ledger/chains/{chain_name}/blocks": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A page of blocks */
        get: operations["getApiLedgerChainsChainNameBlocks"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/ledger/chains/{chain_name}/blocks/{index_or_hash}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One block by index or hash */
        get: operations["getApiLedgerChainsChainNameBlocksIndexOrHash"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/ledger/chains/{chain_name}/blocks/{index_or_hash}/anchor": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The Main Chain anchor covering a block, with proofs */
        get: operations["getApiLedgerChainsChainNameBlocksIndexOrHashAnchor"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/ledger/chains/{chain_name}/blocks/{index_or_hash}/proof": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Inclusion proof of a block */
        get: operations["getApiLedgerChainsChainNameBlocksIndexOrHashProof"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/ledger/chains/{chain_name}/checkpoint": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A signed checkpoint: tree size and root */
        get: operations["getApiLedgerChainsChainNameCheckpoint"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/ledger/chains/{chain_name}/consistency": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Consistency proof between two tree sizes */
        get: operations["getApiLedgerChainsChainNameConsistency"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/ledger/chains/{chain_name}/create": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Create a Sub-Chain */
        post: operations["postApiLedgerChainsChainNameCreate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/ledger/chains/{chain_name}/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Add an event */
        post: operations["postApiLedgerChainsChainNameEvents"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/ledger/chains/{chain_name}/events/batch": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Add up to 99 events, one block each, in one atomic commit (extension) */
        post: operations["postApiLedgerChainsChainNameEventsBatch"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/ledger/chains/{chain_name}/evidence": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** What a verifying client checks blocks with, in one answer: signed checkpoint, inclusion and consistency proofs, blocks (extension) */
        get: operations["getApiLedgerChainsChainNameEvidence"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/ledger/chains/{chain_name}/stats": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Chain statistics */
        get: operations["getApiLedgerChainsChainNameStats"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/ledger/chains/{chain_name}/submit-proof": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Anchor a Sub-Chain in the Main Chain */
        post: operations["postApiLedgerChainsChainNameSubmitProof"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/ledger/chains/{chain_name}/verify": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Re-check every hash, link and anchor of a chain */
        get: operations["getApiLedgerChainsChainNameVerify"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/ledger/entities/{entity_id}/trace": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Trace an entity across chains */
        get: operations["getApiLedgerEntitiesEntityIdTrace"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/ledger/health": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Health check */
        get: operations["getApiLedgerHealth"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/ledger/identity": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The node id and public key that sign checkpoints (any reader) */
        get: operations["getApiLedgerIdentity"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/ledger/network/ping/{target_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Ping a peer and check its identity */
        get: operations["getApiLedgerNetworkPingTargetId"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/ledger/offchain": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Store a payload off chain (encrypted, in IPFS) */
        post: operations["postApiLedgerOffchain"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/ledger/subjects/{subject_id}/erase": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Erase a data subject: destroy its key, so its events' details read as erased (extension) */
        post: operations["postApiLedgerSubjectsSubjectIdErase"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/chains": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The Main Chain and the Sub-Chains, a page at a time */
        get: operations["getApiV1Chains"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/chains/{chain_name}/blocks": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A page of blocks */
        get: operations["getApiV1ChainsChainNameBlocks"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/chains/{chain_name}/blocks/{index_or_hash}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One block by index or hash */
        get: operations["getApiV1ChainsChainNameBlocksIndexOrHash"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/chains/{chain_name}/blocks/{index_or_hash}/anchor": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The Main Chain anchor covering a block, with proofs */
        get: operations["getApiV1ChainsChainNameBlocksIndexOrHashAnchor"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/chains/{chain_name}/blocks/{index_or_hash}/proof": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Inclusion proof of a block */
        get: operations["getApiV1ChainsChainNameBlocksIndexOrHashProof"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/chains/{chain_name}/checkpoint": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A signed checkpoint: tree size and root */
        get: operations["getApiV1ChainsChainNameCheckpoint"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/chains/{chain_name}/consistency": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Consistency proof between two tree sizes */
        get: operations["getApiV1ChainsChainNameConsistency"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/chains/{chain_name}/create": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Create a Sub-Chain */
        post: operations["postApiV1ChainsChainNameCreate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/chains/{chain_name}/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Add an event */
        post: operations["postApiV1ChainsChainNameEvents"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/chains/{chain_name}/events/batch": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Add up to 99 events, one block each, in one atomic commit (extension) */
        post: operations["postApiV1ChainsChainNameEventsBatch"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/chains/{chain_name}/evidence": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** What a verifying client checks blocks with, in one answer: signed checkpoint, inclusion and consistency proofs, blocks (extension) */
        get: operations["getApiV1ChainsChainNameEvidence"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/chains/{chain_name}/stats": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Chain statistics */
        get: operations["getApiV1ChainsChainNameStats"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/chains/{chain_name}/submit-proof": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Anchor a Sub-Chain in the Main Chain */
        post: operations["postApiV1ChainsChainNameSubmitProof"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/chains/{chain_name}/verify": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Re-check every hash, link and anchor of a chain */
        get: operations["getApiV1ChainsChainNameVerify"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/entities/{entity_id}/trace": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Trace an entity across chains */
        get: operations["getApiV1EntitiesEntityIdTrace"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/health": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Health check */
        get: operations["getApiV1Health"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/identity": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The node id and public key that sign checkpoints (any reader) */
        get: operations["getApiV1Identity"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/offchain": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Store a payload off chain (encrypted, in IPFS) */
        post: operations["postApiV1Offchain"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/subjects/{subject_id}/erase": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Erase a data subject: destroy its key, so its events' details read as erased (extension) */
        post: operations["postApiV1SubjectsSubjectIdErase"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v2/channels": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Create a channel (and its Sub-Chain) */
        post: operations["postApiV2Channels"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v2/channels/{channel_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Channel information */
        get: operations["getApiV2ChannelsChannelId"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v2/channels/{channel_id}/organizations": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Add a member organization */
        post: operations["postApiV2ChannelsChannelIdOrganizations"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v2/channels/{channel_id}/organizations/{org_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** Remove a member organization (admins) */
        delete: operations["deleteApiV2ChannelsChannelIdOrganizationsOrgId"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v2/channels/{channel_id}/private-collections": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Create a private data collection */
        post: operations["postApiV2ChannelsChannelIdPrivateCollections"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v2/contracts": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Register a contract version */
        post: operations["postApiV2Contracts"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v2/contracts/{contract_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A contract's versions */
        get: operations["getApiV2ContractsContractId"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v2/contracts/execute": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Execute a contract */
        post: operations["postApiV2ContractsExecute"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v2/health": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Health check */
        get: operations["getApiV2Health"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v2/organizations": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List organizations */
        get: operations["getApiV2Organizations"];
        put?: never;
        /** Register an organization */
        post: operations["postApiV2Organizations"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v2/organizations/{org_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One organization */
        get: operations["getApiV2OrganizationsOrgId"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v2/private-data": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Write private data (encrypted, off the common ledger) */
        post: operations["postApiV2PrivateData"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v2/private-data/{channel}/{collection}/{key}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Read private data (members and admins) */
        get: operations["getApiV2PrivateDataChannelCollectionKey"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/docs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Interactive API documentation */
        get: operations["getDocs"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/docs/{file}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The documentation page's files */
        get: operations["getDocsFile"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/explorer": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The explorer dashboard */
        get: operations["getExplorer"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/explorer/{file}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The explorer's files */
        get: operations["getExplorerFile"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/explorer/assets/{file}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The explorer's built assets */
        get: operations["getExplorerAssetsFile"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/explorer/config.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Where the explorer finds the WebSocket, and the witnesses' public keys it pins */
        get: operations["getExplorerConfigJson"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/graphql": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** GraphQL queries */
        get: operations["getGraphql"];
        put?: never;
        /** GraphQL queries and mutations */
        post: operations["postGraphql"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Prometheus metrics (text 0.0.4) */
        get: operations["getMetrics"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/openapi.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** This API, described in OpenAPI 3.1 */
        get: operations["getOpenapiJson"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/tlog/{chain_name}/checkpoint": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The chain's C2SP tlog checkpoint, a signed note */
        get: operations["getTlogChainNameCheckpoint"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/tlog/{chain_name}/tile/{tile_path}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** C2SP tlog-tiles: hash tiles <L>/<N>[.p/<W>] and entry bundles entries/<N>[.p/<W>] */
        get: operations["getTlogChainNameTileTilePath"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/tlog/vkey": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The C2SP signed-note verifier key of the checkpoints */
        get: operations["getTlogVkey"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /** @description A block: hash = SHA-256 of the RFC 8785 JSON of every other field, events as stored */
        Block: {
            chain_name: string;
            events: components["schemas"]["Event"][];
            hash: string;
            index: number;
            previous_hash: string;
            timestamp: number;
        };
        Def6: JsonValue;
        Def7: JsonValue;
        Error: {
            /** @description A message, or for 422 a list of {loc, msg, type} */
            detail: string | {
                loc?: (string | number)[];
                msg?: string;
                type?: string;
            }[];
            /** Format: uuid */
            request_id: string;
        };
        /** @description An event as answered */
        Event: {
            block_index: number;
            chain_name: string;
            /** @description null only for an erased data subject (then `erased: true`) */
            details: {
                [key: string]: unknown;
            } | null;
            details_cid: string | null;
            details_metadata: {
                [key: string]: unknown;
            } | null;
            details_nonce: string | null;
            /** @description Erasable events only: the details sealed under the subject key */
            details_sealed?: string | null;
            entity_id: string;
            erased?: boolean;
            event_id: string;
            event_type: string;
            is_offchain: boolean;
            /** @description With resolve_cid: why the off-chain details could not be read */
            resolve_error?: string;
            /** @description Events of a channel's chain only: 128 random bits hashed with the event, so its public block hash confirms no guess at its content */
            salt?: string;
            /** @description Secure events only: who signed the event, and the signature anyone can check again */
            signed?: {
                /** @description The node it was signed for, when the signer named one */
                node_id?: string;
                nonce: string;
                org_id: string;
                /** @description The Ed25519 key it was signed with, hex, as registered then */
                public_key: string;
                /** @description Ed25519, hex, over the RFC 8785 JSON of chain_name, entity_id, event_type, details, details_metadata (unless null), node_id (if named) and nonce */
                signature: string;
            };
            /** @description Erasable events only: the data subject */
            subject_id?: string;
            timestamp: number;
        };
        /** @description Everything a verifying client needs for some blocks, in one answer */
        Evidence: {
            /** @description With blocks=true: the blocks as stored (as hashed) */
            blocks?: components["schemas"]["Block"][];
            chain_name: string;
            /** @description The latest C2SP checkpoint (signed note), unless tree_size was given */
            checkpoint: string | null;
            /** @description RFC 9162 consistency proof from known_size to tree_size */
            consistency: {
                from: number;
                proof: string[];
            } | null;
            /** @description One per run of consecutive leaves: its last leaf's inclusion proof */
            inclusion: {
                leaf_index: number;
                proof: string[];
            }[];
            tree_size: number;
        };
        GraphqlErrors: {
            errors: {
                extensions?: {
                    code?: string;
                    status?: number;
                };
                locations?: {
                    column?: number;
                    line?: number;
                }[];
                message: string;
            }[];
        };
        Organization: {
            created_at: string;
            msp_id: string;
            name: string;
            org_id: string;
            public_key: string | null;
        };
        Peer: {
            created_at: string;
            peer_id: string;
            public_key: string;
            url: string;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    postApiAdminChainsChainNameSecureEvents: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                chain_name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @default {} */
                    details?: {
                        [key: string]: unknown;
                    };
                    details_metadata?: {
                        [key: string]: unknown;
                    } | null;
                    entity_id: string;
                    event_type: string;
                    node_id?: string;
                    nonce: string;
                    org_id: string;
                    signature: string;
                };
            };
        };
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        event_id: string;
                        message: string;
                        signer: string;
                        /** @constant */
                        success: true;
                        /** @constant */
                        verified: true;
                    };
                };
            };
        };
    };
    getApiAdminIdentity: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        algorithm: string;
                        node_id: string;
                        public_key: string;
                    };
                };
            };
        };
    };
    postApiAdminIpfsDecode: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    cid: string;
                    nonce: string;
                };
            };
        };
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        cid: string;
                        data: unknown;
                        nonce: string;
                    };
                };
            };
        };
    };
    getApiAdminPeers: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Peer"][];
                };
            };
        };
    };
    postApiAdminPeers: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    api_key?: string;
                    peer_id: string;
                    public_key: string;
                    /** Format: uri */
                    url: string;
                };
            };
        };
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        created_at: string;
                        peer_id: string;
                        public_key: string;
                        /** @constant */
                        success: true;
                        url: string;
                    };
                };
            };
        };
    };
    getApiAdminStatus: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        chains_active: number;
                        license_active: boolean;
                        /** @constant */
                        status: "active";
                        uptime: string;
                        uptime_seconds: number;
                        version: string;
                    };
                };
            };
        };
    };
    postApiAdminVerifyIdentity: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    challenge: string;
                };
            };
        };
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        algorithm: string;
                        challenge: string;
                        node_id: string;
                        public_key: string;
                        signature: string;
                        /** @constant */
                        status: "success";
                    };
                };
            };
        };
    };
    postApiBusinessChannels: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    name: string;
                };
            };
        };
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        chain_name: string;
                        channel_id: string;
                        created_at: string;
                        name: string;
                        /** @constant */
                        success: true;
                    };
                };
            };
        };
    };
    getApiBusinessChannelsChannelId: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                channel_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        block_count: number;
                        chain_name: string;
                        channel_id: string;
                        collections: string[];
                        created_at: string;
                        name: string;
                        organizations: string[];
                    };
                };
            };
        };
    };
    postApiBusinessChannelsChannelIdOrganizations: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                channel_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    org_id: string;
                };
            };
        };
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        channel_id: string;
                        event_id: string;
                        org_id: string;
                        /** @constant */
                        success: true;
                    };
                };
            };
        };
    };
    deleteApiBusinessChannelsChannelIdOrganizationsOrgId: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                channel_id: string;
                org_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        channel_id: string;
                        event_id: string;
                        org_id: string;
                        /** @constant */
                        success: true;
                    };
                };
            };
        };
    };
    postApiBusinessChannelsChannelIdPrivateCollections: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                channel_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    collection: string;
                };
            };
        };
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        channel_id: string;
                        collection: string;
                        /** @constant */
                        success: true;
                    };
                };
            };
        };
    };
    postApiBusinessContracts: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    contract_id: string;
                    implementation?: string | null;
                    implementation_cid?: string | null;
                    implementation_nonce?: string | null;
                    /** @default {} */
                    metadata?: {
                        [key: string]: unknown;
                    };
                    version: string;
                };
            };
        };
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        code_hash: string;
                        contract_id: string;
                        owner: string | null;
                        /** @constant */
                        success: true;
                        version: string;
                    };
                };
            };
        };
    };
    getApiBusinessContractsContractId: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                contract_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        contract_id: string;
                        latest: string;
                        owner: string | null;
                        versions: {
                            code_hash: string;
                            created_at: string;
                            metadata: {
                                [key: string]: unknown;
                            };
                            version: string;
                        }[];
                    };
                };
            };
        };
    };
    postApiBusinessContractsExecute: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @default {} */
                    context?: {
                        chain?: string;
                    } & {
                        [key: string]: unknown;
                    };
                    contract_id: string;
                    event: {
                        /** @default {} */
                        details?: {
                            [key: string]: unknown;
                        };
                        entity_id: string;
                        event: string;
                    };
                    version?: string;
                };
            };
        };
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        contract_id: string;
                        duration_ms: number;
                        emitted_event_ids: string[];
                        result: unknown;
                        /** @constant */
                        success: true;
                        version: string;
                    };
                };
            };
        };
    };
    getApiBusinessHealth: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        checks: {
                            [key: string]: string;
                        };
                        service: string;
                        /** @enum {string} */
                        status: "healthy" | "degraded";
                        version: string;
                    };
                };
            };
        };
    };
    getApiBusinessOrganizations: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Organization"][];
                };
            };
        };
    };
    postApiBusinessOrganizations: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    name: string;
                    org_id: string;
                    public_key?: string | null;
                };
            };
        };
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        msp_id: string;
                        name: string;
                        org_id: string;
                        public_key: string | null;
                        /** @constant */
                        success: true;
                    };
                };
            };
        };
    };
    getApiBusinessOrganizationsOrgId: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                org_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Organization"];
                };
            };
        };
    };
    postApiBusinessPrivateData: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    channel: string;
                    collection: string;
                    /** @default {} */
                    event_metadata?: {
                        [key: string]: unknown;
                    };
                    key: string;
                    subject_id?: string;
                    value?: string;
                    value_cid?: string;
                    value_nonce?: string | null;
                };
            };
        };
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        channel: string;
                        collection: string;
                        event_id: string;
                        key: string;
                        /** @constant */
                        success: true;
                        value_hash: string;
                    };
                };
            };
        };
    };
    getApiBusinessPrivateDataChannelCollectionKey: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                channel: string;
                collection: string;
                key: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        channel: string;
                        collection: string;
                        event_id: string;
                        key: string;
                        updated_at: string;
                        value: unknown;
                        value_hash: string;
                    };
                };
            };
        };
    };
    getApiLedgerChains: {
        parameters: {
            query?: {
                after?: string;
                limit?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        block_count: number;
                        latest_block_hash: string | null;
                        name: string;
                        /** @enum {string} */
                        type: "main" | "sub";
                    }[];
                };
            };
        };
    };
    getApiLedgerChainsChainNameBlocks: {
        parameters: {
            query?: {
                limit?: string;
                offset?: string;
                order?: "asc" | "desc";
                resolve_cid?: string;
                tree_size?: string;
            };
            header?: never;
            path: {
                chain_name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        blocks: components["schemas"]["Block"][];
                        chain_name: string;
                        limit: number;
                        offset: number;
                        total: number;
                    };
                };
            };
        };
    };
    getApiLedgerChainsChainNameBlocksIndexOrHash: {
        parameters: {
            query?: {
                resolve_cid?: string;
            };
            header?: never;
            path: {
                chain_name: string;
                index_or_hash: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Block"];
                };
            };
        };
    };
    getApiLedgerChainsChainNameBlocksIndexOrHashAnchor: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                chain_name: string;
                index_or_hash: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    getApiLedgerChainsChainNameBlocksIndexOrHashProof: {
        parameters: {
            query?: {
                tree_size?: string;
            };
            header?: never;
            path: {
                chain_name: string;
                index_or_hash: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        block_hash: string;
                        chain_name: string;
                        leaf_hash: string;
                        leaf_index: number;
                        proof: string[];
                        root: string;
                        tree_size: number;
                    };
                };
            };
        };
    };
    getApiLedgerChainsChainNameCheckpoint: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                chain_name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        algorithm: "ed25519";
                        chain_name: string;
                        node_id: string;
                        public_key: string;
                        root: string;
                        signature: string;
                        timestamp: number;
                        tree_size: number;
                    };
                };
            };
        };
    };
    getApiLedgerChainsChainNameConsistency: {
        parameters: {
            query: {
                first: string;
                second: string;
            };
            header?: never;
            path: {
                chain_name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        chain_name: string;
                        first: number;
                        first_root: string;
                        proof: string[];
                        second: number;
                        second_root: string;
                    };
                };
            };
        };
    };
    postApiLedgerChainsChainNameCreate: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                chain_name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        chain_name: string;
                        message: string;
                        /** @constant */
                        success: true;
                    };
                };
            };
        };
    };
    postApiLedgerChainsChainNameEvents: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes retries safe: the same key with the same body answers the first result (header Idempotent-Replayed: true) and appends nothing; with another body 422; while the first is in progress 409. 1-255 printable ASCII characters; kept 24 h. */
                "Idempotency-Key"?: string;
            };
            path: {
                chain_name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    details?: {
                        [key: string]: unknown;
                    } | null;
                    details_cid?: string | null;
                    details_metadata?: {
                        [key: string]: unknown;
                    } | null;
                    details_nonce?: string | null;
                    entity_id: string;
                    event?: string;
                    event_type?: string;
                    subject_id?: string;
                };
            };
        };
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        event_id: string;
                        message: string;
                        /** @constant */
                        success: true;
                    };
                };
            };
        };
    };
    postApiLedgerChainsChainNameEventsBatch: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes retries safe: the same key with the same body answers the first result (header Idempotent-Replayed: true) and appends nothing; with another body 422; while the first is in progress 409. 1-255 printable ASCII characters; kept 24 h. */
                "Idempotency-Key"?: string;
            };
            path: {
                chain_name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    events: {
                        details?: {
                            [key: string]: unknown;
                        } | null;
                        details_cid?: string | null;
                        details_metadata?: {
                            [key: string]: unknown;
                        } | null;
                        details_nonce?: string | null;
                        entity_id: string;
                        event?: string;
                        event_type?: string;
                        subject_id?: string;
                    }[];
                };
            };
        };
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        event_ids: string[];
                        message: string;
                        /** @constant */
                        success: true;
                    };
                };
            };
        };
    };
    getApiLedgerChainsChainNameEvidence: {
        parameters: {
            query?: {
                blocks?: string;
                known_size?: string;
                leaves?: string;
                tree_size?: string;
                witnessed?: string;
            };
            header?: never;
            path: {
                chain_name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Evidence"];
                };
            };
        };
    };
    getApiLedgerChainsChainNameStats: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                chain_name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        chain_name: string;
                        proof_count: number | null;
                        registered_sub_chains: number | null;
                        total_blocks: number;
                        total_events: number;
                    };
                };
            };
        };
    };
    postApiLedgerChainsChainNameSubmitProof: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                chain_name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        message: string;
                        proof_id: string;
                        /** @constant */
                        success: true;
                    };
                };
            };
        };
    };
    getApiLedgerChainsChainNameVerify: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                chain_name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    getApiLedgerEntitiesEntityIdTrace: {
        parameters: {
            query?: {
                chain_name?: string;
                cursor?: string;
                limit?: string;
                resolve_cid?: string;
            };
            header?: never;
            path: {
                entity_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        chains: string[];
                        entity_id: string;
                        events: components["schemas"]["Event"][];
                        next_cursor: string | null;
                    };
                };
            };
        };
    };
    getApiLedgerHealth: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        checks: {
                            [key: string]: string;
                        };
                        service: string;
                        /** @enum {string} */
                        status: "healthy" | "degraded";
                        version: string;
                    };
                };
            };
        };
    };
    getApiLedgerIdentity: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        algorithm: string;
                        node_id: string;
                        public_key: string;
                    };
                };
            };
        };
    };
    getApiLedgerNetworkPingTargetId: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                target_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        latency_ms: number | null;
                        reachable: boolean;
                        target_id: string;
                        verified: boolean;
                    };
                };
            };
        };
    };
    postApiLedgerOffchain: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    chain?: string;
                    channel?: string;
                    collection?: string;
                    data: components["schemas"]["Def6"];
                };
            };
        };
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        cid: string;
                        nonce: string;
                        size: number;
                    };
                };
            };
        };
    };
    postApiLedgerSubjectsSubjectIdErase: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                subject_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    reason: string;
                };
            };
        };
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    getApiV1Chains: {
        parameters: {
            query?: {
                after?: string;
                limit?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        block_count: number;
                        latest_block_hash: string | null;
                        name: string;
                        /** @enum {string} */
                        type: "main" | "sub";
                    }[];
                };
            };
        };
    };
    getApiV1ChainsChainNameBlocks: {
        parameters: {
            query?: {
                limit?: string;
                offset?: string;
                order?: "asc" | "desc";
                resolve_cid?: string;
                tree_size?: string;
            };
            header?: never;
            path: {
                chain_name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        blocks: components["schemas"]["Block"][];
                        chain_name: string;
                        limit: number;
                        offset: number;
                        total: number;
                    };
                };
            };
        };
    };
    getApiV1ChainsChainNameBlocksIndexOrHash: {
        parameters: {
            query?: {
                resolve_cid?: string;
            };
            header?: never;
            path: {
                chain_name: string;
                index_or_hash: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Block"];
                };
            };
        };
    };
    getApiV1ChainsChainNameBlocksIndexOrHashAnchor: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                chain_name: string;
                index_or_hash: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    getApiV1ChainsChainNameBlocksIndexOrHashProof: {
        parameters: {
            query?: {
                tree_size?: string;
            };
            header?: never;
            path: {
                chain_name: string;
                index_or_hash: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        block_hash: string;
                        chain_name: string;
                        leaf_hash: string;
                        leaf_index: number;
                        proof: string[];
                        root: string;
                        tree_size: number;
                    };
                };
            };
        };
    };
    getApiV1ChainsChainNameCheckpoint: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                chain_name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        algorithm: "ed25519";
                        chain_name: string;
                        node_id: string;
                        public_key: string;
                        root: string;
                        signature: string;
                        timestamp: number;
                        tree_size: number;
                    };
                };
            };
        };
    };
    getApiV1ChainsChainNameConsistency: {
        parameters: {
            query: {
                first: string;
                second: string;
            };
            header?: never;
            path: {
                chain_name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        chain_name: string;
                        first: number;
                        first_root: string;
                        proof: string[];
                        second: number;
                        second_root: string;
                    };
                };
            };
        };
    };
    postApiV1ChainsChainNameCreate: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                chain_name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        chain_name: string;
                        message: string;
                        /** @constant */
                        success: true;
                    };
                };
            };
        };
    };
    postApiV1ChainsChainNameEvents: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes retries safe: the same key with the same body answers the first result (header Idempotent-Replayed: true) and appends nothing; with another body 422; while the first is in progress 409. 1-255 printable ASCII characters; kept 24 h. */
                "Idempotency-Key"?: string;
            };
            path: {
                chain_name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    details?: {
                        [key: string]: unknown;
                    } | null;
                    details_cid?: string | null;
                    details_metadata?: {
                        [key: string]: unknown;
                    } | null;
                    details_nonce?: string | null;
                    entity_id: string;
                    event?: string;
                    event_type?: string;
                    subject_id?: string;
                };
            };
        };
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        event_id: string;
                        message: string;
                        /** @constant */
                        success: true;
                    };
                };
            };
        };
    };
    postApiV1ChainsChainNameEventsBatch: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes retries safe: the same key with the same body answers the first result (header Idempotent-Replayed: true) and appends nothing; with another body 422; while the first is in progress 409. 1-255 printable ASCII characters; kept 24 h. */
                "Idempotency-Key"?: string;
            };
            path: {
                chain_name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    events: {
                        details?: {
                            [key: string]: unknown;
                        } | null;
                        details_cid?: string | null;
                        details_metadata?: {
                            [key: string]: unknown;
                        } | null;
                        details_nonce?: string | null;
                        entity_id: string;
                        event?: string;
                        event_type?: string;
                        subject_id?: string;
                    }[];
                };
            };
        };
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        event_ids: string[];
                        message: string;
                        /** @constant */
                        success: true;
                    };
                };
            };
        };
    };
    getApiV1ChainsChainNameEvidence: {
        parameters: {
            query?: {
                blocks?: string;
                known_size?: string;
                leaves?: string;
                tree_size?: string;
                witnessed?: string;
            };
            header?: never;
            path: {
                chain_name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Evidence"];
                };
            };
        };
    };
    getApiV1ChainsChainNameStats: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                chain_name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        chain_name: string;
                        proof_count: number | null;
                        registered_sub_chains: number | null;
                        total_blocks: number;
                        total_events: number;
                    };
                };
            };
        };
    };
    postApiV1ChainsChainNameSubmitProof: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                chain_name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        message: string;
                        proof_id: string;
                        /** @constant */
                        success: true;
                    };
                };
            };
        };
    };
    getApiV1ChainsChainNameVerify: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                chain_name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    getApiV1EntitiesEntityIdTrace: {
        parameters: {
            query?: {
                chain_name?: string;
                cursor?: string;
                limit?: string;
                resolve_cid?: string;
            };
            header?: never;
            path: {
                entity_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        chains: string[];
                        entity_id: string;
                        events: components["schemas"]["Event"][];
                        next_cursor: string | null;
                    };
                };
            };
        };
    };
    getApiV1Health: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        checks: {
                            [key: string]: string;
                        };
                        service: string;
                        /** @enum {string} */
                        status: "healthy" | "degraded";
                        version: string;
                    };
                };
            };
        };
    };
    getApiV1Identity: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        algorithm: string;
                        node_id: string;
                        public_key: string;
                    };
                };
            };
        };
    };
    postApiV1Offchain: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    chain?: string;
                    channel?: string;
                    collection?: string;
                    data: components["schemas"]["Def7"];
                };
            };
        };
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        cid: string;
                        nonce: string;
                        size: number;
                    };
                };
            };
        };
    };
    postApiV1SubjectsSubjectIdErase: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                subject_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    reason: string;
                };
            };
        };
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    postApiV2Channels: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    name: string;
                };
            };
        };
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        chain_name: string;
                        channel_id: string;
                        created_at: string;
                        name: string;
                        /** @constant */
                        success: true;
                    };
                };
            };
        };
    };
    getApiV2ChannelsChannelId: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                channel_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        block_count: number;
                        chain_name: string;
                        channel_id: string;
                        collections: string[];
                        created_at: string;
                        name: string;
                        organizations: string[];
                    };
                };
            };
        };
    };
    postApiV2ChannelsChannelIdOrganizations: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                channel_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    org_id: string;
                };
            };
        };
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        channel_id: string;
                        event_id: string;
                        org_id: string;
                        /** @constant */
                        success: true;
                    };
                };
            };
        };
    };
    deleteApiV2ChannelsChannelIdOrganizationsOrgId: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                channel_id: string;
                org_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        channel_id: string;
                        event_id: string;
                        org_id: string;
                        /** @constant */
                        success: true;
                    };
                };
            };
        };
    };
    postApiV2ChannelsChannelIdPrivateCollections: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                channel_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    collection: string;
                };
            };
        };
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        channel_id: string;
                        collection: string;
                        /** @constant */
                        success: true;
                    };
                };
            };
        };
    };
    postApiV2Contracts: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    contract_id: string;
                    implementation?: string | null;
                    implementation_cid?: string | null;
                    implementation_nonce?: string | null;
                    /** @default {} */
                    metadata?: {
                        [key: string]: unknown;
                    };
                    version: string;
                };
            };
        };
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        code_hash: string;
                        contract_id: string;
                        owner: string | null;
                        /** @constant */
                        success: true;
                        version: string;
                    };
                };
            };
        };
    };
    getApiV2ContractsContractId: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                contract_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        contract_id: string;
                        latest: string;
                        owner: string | null;
                        versions: {
                            code_hash: string;
                            created_at: string;
                            metadata: {
                                [key: string]: unknown;
                            };
                            version: string;
                        }[];
                    };
                };
            };
        };
    };
    postApiV2ContractsExecute: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @default {} */
                    context?: {
                        chain?: string;
                    } & {
                        [key: string]: unknown;
                    };
                    contract_id: string;
                    event: {
                        /** @default {} */
                        details?: {
                            [key: string]: unknown;
                        };
                        entity_id: string;
                        event: string;
                    };
                    version?: string;
                };
            };
        };
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        contract_id: string;
                        duration_ms: number;
                        emitted_event_ids: string[];
                        result: unknown;
                        /** @constant */
                        success: true;
                        version: string;
                    };
                };
            };
        };
    };
    getApiV2Health: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        checks: {
                            [key: string]: string;
                        };
                        service: string;
                        /** @enum {string} */
                        status: "healthy" | "degraded";
                        version: string;
                    };
                };
            };
        };
    };
    getApiV2Organizations: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Organization"][];
                };
            };
        };
    };
    postApiV2Organizations: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    name: string;
                    org_id: string;
                    public_key?: string | null;
                };
            };
        };
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        msp_id: string;
                        name: string;
                        org_id: string;
                        public_key: string | null;
                        /** @constant */
                        success: true;
                    };
                };
            };
        };
    };
    getApiV2OrganizationsOrgId: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                org_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Organization"];
                };
            };
        };
    };
    postApiV2PrivateData: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    channel: string;
                    collection: string;
                    /** @default {} */
                    event_metadata?: {
                        [key: string]: unknown;
                    };
                    key: string;
                    subject_id?: string;
                    value?: string;
                    value_cid?: string;
                    value_nonce?: string | null;
                };
            };
        };
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        channel: string;
                        collection: string;
                        event_id: string;
                        key: string;
                        /** @constant */
                        success: true;
                        value_hash: string;
                    };
                };
            };
        };
    };
    getApiV2PrivateDataChannelCollectionKey: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                channel: string;
                collection: string;
                key: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        channel: string;
                        collection: string;
                        event_id: string;
                        key: string;
                        updated_at: string;
                        value: unknown;
                        value_hash: string;
                    };
                };
            };
        };
    };
    getDocs: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    getDocsFile: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                file: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    getExplorer: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    getExplorerFile: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                file: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    getExplorerAssetsFile: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                file: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    getExplorerConfigJson: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    getGraphql: {
        parameters: {
            query: {
                operationName?: string;
                query: string;
                variables?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The query was refused (parse, validation, depth, cost, method or role): GraphQL errors */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["GraphqlErrors"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    postGraphql: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    operationName?: string | null;
                    query: string;
                    variables?: {
                        [key: string]: unknown;
                    } | null;
                };
            };
        };
        responses: {
            /** @description The query was refused (parse, validation, depth, cost, method or role): GraphQL errors */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["GraphqlErrors"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    getMetrics: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    getOpenapiJson: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    getTlogChainNameCheckpoint: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                chain_name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    getTlogChainNameTileTilePath: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                chain_name: string;
                /** @description The rest of the path: it may contain slashes */
                tile_path: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    getTlogVkey: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request was refused (docs/rules.md, "Errors") */
            "4XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The service or a dependency failed; 503 carries Retry-After */
            "5XX": {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Success */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
}

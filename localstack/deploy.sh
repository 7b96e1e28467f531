#!/usr/bin/env bash
# npm run deploy:localstack — the same CDK stack as AWS, deployed onto LocalStack with aws-cdk-local.
# aws-cdk-local's default host needs public DNS (localhost.localstack.cloud), so both endpoints are set
# explicitly to LocalStack's edge port.
set -euo pipefail
cd "$(dirname "$0")/.."

LOCALSTACK_URL="${LOCALSTACK_URL:-http://localhost:4566}"
export AWS_ENDPOINT_URL="$LOCALSTACK_URL"
export AWS_ENDPOINT_URL_S3="$LOCALSTACK_URL"
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-test}" AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-test}"
export AWS_REGION="${AWS_REGION:-us-east-1}" CDK_DEFAULT_REGION="${AWS_REGION:-us-east-1}" CDK_DEFAULT_ACCOUNT=000000000000
CORS_ORIGINS="${CORS_ORIGINS:-http://localhost:3000}"
IPFS_API_URL="${IPFS_API_URL:-http://kubo:5001}"   # the compose file's Kubo, as the functions' containers see it

if ! curl -sf "$LOCALSTACK_URL/_localstack/health" >/dev/null; then
  echo "LocalStack does not answer at $LOCALSTACK_URL. Start it first:" >&2
  echo "  LOCALSTACK_AUTH_TOKEN=… docker compose -f localstack/docker-compose.yml up -d" >&2
  exit 1
fi

npx cdklocal bootstrap --no-notices
npx cdklocal deploy --no-notices --require-approval never \
  --parameters "CorsOrigins=$CORS_ORIGINS" --parameters "IpfsApiUrl=$IPFS_API_URL" --outputs-file localstack/outputs.json

node -e '
const outputs = Object.values(require("./localstack/outputs.json"))[0];
console.log(`\nDeployed. API: ${outputs.ApiUrl}`);
console.log("First admin key:");
console.log(`  SVC_DYNAMODB_ENDPOINT='"$LOCALSTACK_URL"' SVC_REGISTRY_TABLE=${outputs.RegistryTableName} npm run keys -- create --role admin`);
console.log("Then:");
console.log(`  npm run smoke -- --url ${outputs.ApiUrl} --api-key lk_…`);
'

/**
 * The stack's CDN (docs/deploy.md, "The CDN"): a CloudFront distribution in front of the whole HTTP API. What may
 * be shared (/tlog/*: tiles, entry bundles, checkpoints, which C2SP clients fetch and expect behind a CDN) is
 * cached as each answer's Cache-Control says; everything else passes through uncached with its headers intact.
 * The distribution sends the edge secret in X-Ledger-Edge, so that the functions believe the viewer address it
 * names (shared/http/cdn.ts).
 */
import { Aws, Duration, type Stack, Validations } from 'aws-cdk-lib';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import {
  AllowedMethods,
  CacheCookieBehavior,
  CacheHeaderBehavior,
  CachePolicy,
  CacheQueryStringBehavior,
  Distribution,
  HttpVersion,
  OriginProtocolPolicy,
  OriginRequestPolicy,
  OriginSslPolicy,
  PriceClass,
  ViewerProtocolPolicy,
} from 'aws-cdk-lib/aws-cloudfront';
import { HttpOrigin } from 'aws-cdk-lib/aws-cloudfront-origins';
import type { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { type StackParameters, webAclOf } from './parameters.ts';

/** The path patterns the CDN caches, as each answer's Cache-Control says; everything else passes through uncached. */
export const CDN_CACHED_PATHS = ['/tlog/*'] as const;

export function cdn(scope: Stack, api: HttpApi, edgeSecret: Secret, parameters: StackParameters): Distribution {
  const origin = new HttpOrigin(`${api.apiId}.execute-api.${Aws.REGION}.${Aws.URL_SUFFIX}`, {
    protocolPolicy: OriginProtocolPolicy.HTTPS_ONLY,
    originSslProtocols: [OriginSslPolicy.TLS_V1_2],
    customHeaders: { 'X-Ledger-Edge': edgeSecret.secretValue.unsafeUnwrap() },
  });
  // The answer's Cache-Control decides (no default lifetime, up to a year); the key is the path alone (tiles take no
  // query), compressed copies apart. A miss forwards every viewer header but Host, the API key included.
  const honourOrigin = new CachePolicy(scope, 'TlogCachePolicy', {
    comment: "Verifiable ledger /tlog: as the answer's Cache-Control says",
    defaultTtl: Duration.seconds(0),
    minTtl: Duration.seconds(0),
    maxTtl: Duration.days(365),
    headerBehavior: CacheHeaderBehavior.none(),
    queryStringBehavior: CacheQueryStringBehavior.none(),
    cookieBehavior: CacheCookieBehavior.none(),
    enableAcceptEncodingGzip: true,
    enableAcceptEncodingBrotli: true,
  });
  const passThrough = {
    origin,
    viewerProtocolPolicy: ViewerProtocolPolicy.HTTPS_ONLY,
    originRequestPolicy: OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
  };
  const distribution = new Distribution(scope, 'Cdn', {
    // The secrets' revision in the comment: raised, it updates the distribution, and CloudFormation reads the edge secret
    // into its header again (a dynamic reference is read when its resource is updated, not otherwise).
    comment: `Verifiable ledger: the HTTP API, /tlog/* cached; secrets revision ${parameters.secretsRevision.valueAsString}`,
    priceClass: PriceClass.PRICE_CLASS_100,
    // The deployer's WAF, if any (WebAclArn): per-client limits at the edge; CdnOnly=true closes the way around it.
    webAclId: webAclOf(scope, parameters),
    httpVersion: HttpVersion.HTTP2_AND_3,
    defaultBehavior: { ...passThrough, allowedMethods: AllowedMethods.ALLOW_ALL, cachePolicy: CachePolicy.CACHING_DISABLED },
    additionalBehaviors: Object.fromEntries(
      CDN_CACHED_PATHS.map((path) => [path, { ...passThrough, allowedMethods: AllowedMethods.ALLOW_GET_HEAD_OPTIONS, cachePolicy: honourOrigin }]),
    ),
  });
  Validations.of(distribution).acknowledge(
    {
      id: 'AwsSolutions::AwsSolutions-CFR1',
      reason: 'A public ledger is read from anywhere: no country is refused; access is decided by API keys.',
    },
    {
      id: 'AwsSolutions::AwsSolutions-CFR2',
      reason:
        'No WAF web ACL by default ($5 a month and $0.60 per million requests): the functions limit requests per key and per viewer address ' +
        '(SVC_RATE_LIMIT_RPM, SVC_AUTH_FAILURES_PER_MINUTE) and the API stage has its own throttle; the WebAclArn parameter attaches one ' +
        '(docs/deploy.md, "The CDN").',
    },
    {
      id: 'AwsSolutions::AwsSolutions-CFR3',
      reason:
        "Every request that reaches the API is logged by the stage's access log and the functions' request lines; what the edge served " +
        "from cache is counted by CloudFront's own metrics. Standard logs would need a log bucket per stack.",
    },
    {
      id: 'AwsSolutions::AwsSolutions-CFR4',
      reason: "The distribution's default *.cloudfront.net certificate; a custom domain and its certificate set TLS 1.2 as the viewers' minimum.",
    },
  );
  return distribution;
}

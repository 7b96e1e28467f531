/**
 * What a GraphQL query may cost before it runs (docs/rules.md, "GraphQL"): at most 10 levels deep (16
 * inside introspection, which the standard introspection query needs), 1000 fields with every fragment
 * spread in place, 1000 points, 10,000 tokens. An object field costs 1 point plus its selections, a
 * scalar nothing, and a list field with a `limit` limit × what each item costs (the way Shopify and
 * GitHub price connections), so that the largest page any list answers (1,000 items) fits it.
 */
import {
  GraphQLError,
  getNamedType,
  getNullableType,
  isLeafType,
  isListType,
  Kind,
  type ASTVisitor,
  type DocumentNode,
  type FragmentDefinitionNode,
  type SelectionSetNode,
  type ValidationContext,
  type ValidationRule,
} from 'graphql';
import type { ComplexityEstimator } from 'graphql-query-complexity';
import { TRACE_LIMIT_MAX, traceScanMax } from '../ledger/ledger.ts';

export const MAX_DEPTH = 10;
/** Depth allowed inside `__schema` / `__type`: the standard introspection query (GraphiQL, codegen) is 13 deep. */
export const MAX_INTROSPECTION_DEPTH = 16;
export const MAX_COMPLEXITY = 1000;
/** Fields a query may resolve, every fragment spread in place. */
export const MAX_FIELDS = 1000;
/** Lexical tokens a document may have (names, punctuation, values): ten per field of a maximal query. */
export const MAX_TOKENS = 10_000;

/**
 * A measure of a document with every fragment spread in place: each field is `1 + measure(its selections)`,
 * siblings are `combine`d. A fragment's measure does not depend on where it is spread, so it is computed
 * once per fragment: walking each spread instead lets a fragment spread twice in one spread twice in one…
 * (2^n walks) stall the process. A cycle counts as 0 here; the standard NoFragmentCycles rule refuses it.
 */
function fragmentMeasure(
  document: DocumentNode,
  combine: (a: number, b: number) => number,
  /** Fields whose selections are not measured (they count as one level, one field). */
  leaf: (name: string) => boolean = () => false,
): (set: SelectionSetNode | undefined) => number {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  const perFragment = new Map<string, number>();
  const visiting = new Set<string>();
  const measure = (set: SelectionSetNode | undefined): number => {
    if (!set) return 0;
    let total = 0;
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) total = combine(total, 1 + (leaf(selection.name.value) ? 0 : measure(selection.selectionSet)));
      else if (selection.kind === Kind.INLINE_FRAGMENT) total = combine(total, measure(selection.selectionSet));
      else {
        const name = selection.name.value;
        if (!perFragment.has(name) && !visiting.has(name)) {
          visiting.add(name);
          perFragment.set(name, measure(fragments.get(name)?.selectionSet));
          visiting.delete(name);
        }
        total = combine(total, perFragment.get(name) ?? 0);
      }
    }
    return total;
  };
  return measure;
}

export const isIntrospection = (name: string) => name === '__schema' || name === '__type';

/**
 * Queries nested deeper than `max` levels of fields (fragments followed) are invalid; inside
 * introspection (`__schema`, `__type`) the limit is `introspectionMax`.
 */
export function depthLimitRule(max: number, introspectionMax = MAX_INTROSPECTION_DEPTH): ValidationRule {
  return (context: ValidationContext): ASTVisitor => {
    const depth = fragmentMeasure(context.getDocument(), Math.max, isIntrospection);
    const fullDepth = fragmentMeasure(context.getDocument(), Math.max);
    return {
      OperationDefinition(node) {
        const found = depth(node.selectionSet);
        const full = fullDepth(node.selectionSet);
        if (found > max) context.reportError(new GraphQLError(`The query is ${found} levels deep; the limit is ${max}`, { nodes: [node] }));
        else if (full > introspectionMax) {
          context.reportError(new GraphQLError(`The query is ${full} levels deep; the limit is ${introspectionMax} inside introspection`, { nodes: [node] }));
        }
      },
    };
  };
}

/** Scalar fields whose resolver reads storage (a chain's statistics): a point each, not nothing. */
const READING_SCALARS = new Set(['totalEvents', 'proofCount', 'registeredSubChains']);
/** What a top-level list with no `limit` is priced as holding (a node may have thousands of chains). */
const UNBOUNDED_LIST_ITEMS = 100;
/** A mutation writes (an append, a chain): priced like ten reads, so one request holds at most 100, as a REST batch holds 99. */
const MUTATION_COST = 10;

/**
 * The cost of a query, as Shopify prices its GraphQL API: a scalar field costs nothing (one that reads storage, 1),
 * an object costs 1 plus its selections, and a list field with a `limit` costs limit × what one item costs (at
 * least 1). A `limit` given as null, or left out, is priced at what the resolver then reads (its default), never as
 * none; a list with no `limit` at all as UNBOUNDED_LIST_ITEMS items; a mutation at MUTATION_COST at least. The number
 * of fields is capped separately (expandedFieldCount), so scalars are not free in bulk.
 */
export const costEstimator: ComplexityEstimator = ({ type, field, args, childComplexity }) => {
  const perItem = Math.max(1, childComplexity);
  const limitArg = field.args.find((arg) => arg.name === 'limit');
  let cost: number;
  if (limitArg) {
    const given = args.limit;
    const fallback = typeof limitArg.defaultValue === 'number' ? limitArg.defaultValue : 1_000;
    const limit = typeof given === 'number' && Number.isFinite(given) && given > 0 ? given : fallback;
    // A trace (and events of an entity, which is one) reads up to traceScanMax(limit) index entries, each a whole
    // block, whatever few events it answers: priced by those.
    const traces = type.name === 'Query' && (field.name === 'trace' || (field.name === 'events' && args.entityId != null));
    // No point for the list itself: the largest page any list answers (1,000 of the cheapest items) is the whole
    // budget, not one point past it (limits 999 and 1,000 had been refused on GraphQL, answered over REST).
    cost = (traces ? traceScanMax(Math.min(limit, TRACE_LIMIT_MAX)) : limit) * perItem;
  } else if (isLeafType(getNamedType(field.type))) {
    cost = READING_SCALARS.has(field.name) ? 1 : 0;
  } else if (type.name === 'Query' && isListType(getNullableType(field.type))) {
    // A top-level list with no limit would read what the node holds (every list of the schema has one today, the
    // chains too); nested lists (a block's events, a trace's) are bounded by the field above them.
    cost = 1 + UNBOUNDED_LIST_ITEMS * perItem;
  } else {
    cost = 1 + childComplexity;
  }
  return type.name === 'Mutation' ? Math.max(cost, MUTATION_COST) : cost;
};

/**
 * The number of fields a query would resolve with every fragment spread in place. It is what the
 * complexity limit counts; checking it first keeps the complexity library, which expands fragments one
 * spread at a time, away from documents that expand exponentially.
 */
export function expandedFieldCount(document: DocumentNode): number {
  const count = fragmentMeasure(document, (a, b) => a + b);
  let total = 0;
  for (const definition of document.definitions) {
    if (definition.kind === Kind.OPERATION_DEFINITION) total += count(definition.selectionSet);
  }
  return total;
}

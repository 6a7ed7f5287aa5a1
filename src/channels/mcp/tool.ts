import { z } from 'zod';
import type { CallToolResult, Tool, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type { Principal } from '../../core/access/principal.js';
import type { Services } from '../../core/services.js';
import { parseArguments, toolError } from './errors.js';

/** What a tool's `run` gets besides its parsed arguments. */
export interface ToolContext {
  principal: Principal;
  services: Services;
  /** Aborted when the client cancels the call or the HTTP connection closes. */
  signal: AbortSignal;
  /** Sends `notifications/progress` when the client asked for progress (a progressToken). */
  progress?: ((progress: number, total: number, message: string) => Promise<void>) | undefined;
}

/**
 * One MCP tool, declared as data like an HTTP RouteSpec: the zod schemas validate the arguments
 * and are also what tools/list shows, so the listing cannot drift from what is accepted.
 * `run` is one core call; its result is the HTTP `data` of the equivalent route.
 */
export interface McpTool<I extends z.ZodObject = z.ZodObject, O extends z.ZodObject = z.ZodObject> {
  name: string;
  title: string;
  /** Written for a model: what it does, what it needs, its limits. */
  description: string;
  input: I;
  output: O;
  /** All four hints, stated: a client must not have to guess a default (they default to the unsafe side). */
  annotations: Required<Pick<ToolAnnotations, 'readOnlyHint' | 'destructiveHint' | 'idempotentHint' | 'openWorldHint'>>;
  run(input: z.output<I>, ctx: ToolContext): Promise<z.output<O>>;
  /**
   * The text block beside structuredContent; default: the data as JSON. Tools returning message
   * bodies fence them (untrusted-text.ts), since some clients show a model only the text.
   */
  text?(data: z.output<O>, input: z.output<I>): string;
  /** structuredContent from the data; default: the data itself (get_message bounds bodies by maxChars). */
  structured?(data: z.output<O>, input: z.output<I>): z.output<O>;
}

/**
 * Arguments are strict, like HTTP JSON bodies (docs/api.md): a misspelt argument is a 400, not
 * silently ignored, and the listed schema says so (additionalProperties false).
 */
export const defineTool = <I extends z.ZodObject, O extends z.ZodObject>(tool: McpTool<I, O>): McpTool<I, O> => ({
  ...tool,
  input: tool.input.strict() as I,
});

/**
 * Re-declares fields of a core schema with a description for the model, keeping every rule
 * (type, limits, refinements, strictness) of the core's schema.
 */
export function describeFields<S extends z.ZodObject>(
  schema: S,
  descriptions: Partial<Record<keyof S['shape'] & string, string>>,
): S {
  const shape: Record<string, z.ZodType> = {};
  for (const [key, text] of Object.entries(descriptions))
    shape[key] = (schema.shape[key] as z.ZodType).describe(text as string);
  return schema.safeExtend(shape) as unknown as S;
}

// draft-07 because the SDK client compiles outputSchema with Ajv's default (draft-07) dialect.
const jsonSchema = (schema: z.ZodType, io: 'input' | 'output') =>
  z.toJSONSchema(schema, { target: 'draft-7', io, unrepresentable: 'any' }) as Tool['inputSchema'];

/** The tools/list entry of a tool. */
export function toolDefinition(tool: McpTool): Tool {
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: jsonSchema(tool.input, 'input'),
    outputSchema: jsonSchema(tool.output, 'output'),
    annotations: { title: tool.title, ...tool.annotations },
  };
}

/**
 * Parse → one core call → result or error. The structured result is the HTTP `data`; the text
 * block repeats it as JSON for clients that only read text (MCP spec, structured content).
 */
export async function runTool(tool: McpTool, args: unknown, ctx: ToolContext): Promise<CallToolResult> {
  try {
    const input = parseArguments(tool.input, args);
    const data = (await tool.run(input, ctx)) as Record<string, unknown>;
    const text = tool.text ? tool.text(data, input) : JSON.stringify(data);
    const structuredContent = (tool.structured ? tool.structured(data, input) : data) as Record<string, unknown>;
    return { content: [{ type: 'text', text }], structuredContent };
  } catch (err) {
    return toolError(err, ctx.services.log, tool.name);
  }
}

// A scripted model read from JSON (the CLI's `--script`): an array of replies. A reply's content may say
// `{{last_tool_result}}`, replaced by the last tool message of the conversation — so a resumed process's
// answer visibly depends on what the transcript carried, not on anything it remembered.
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { parseOrThrow } from '../errors.js';
import type { ChatMessage } from './provider.js';
import { ScriptedProvider, type ScriptStep } from './scripted-provider.js';

const Reply = z.strictObject({
  content: z.string().optional(),
  toolCalls: z
    .array(
      z.strictObject({
        tool: z.string().min(1),
        args: z.json().optional(),
        callId: z.string().min(1).optional(),
      }),
    )
    .optional(),
});
export const ScriptFile = z.array(Reply).min(1);

function lastToolResult(messages: readonly ChatMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === 'tool') return m.content;
  }
  return '';
}

export function scriptSteps(json: unknown): ScriptStep[] {
  return parseOrThrow(ScriptFile, json, 'script').map((r) =>
    r.content?.includes('{{last_tool_result}}')
      ? (messages: readonly ChatMessage[]) => ({
          ...r,
          content: r.content!.replaceAll('{{last_tool_result}}', lastToolResult(messages)),
        })
      : r,
  );
}

export function scriptedProviderFromFile(file: string): ScriptedProvider {
  return new ScriptedProvider(scriptSteps(JSON.parse(readFileSync(file, 'utf8'))));
}

import { currentTurn, lastUserText, reply, type ScriptFn } from '../scripted-model';

/** One agent's part in a BMAD journey: the document it reads (the previous agent's), and the one it writes. */
export interface JourneyStep {
  reads: string | null;
  writes: string;
  text: string;
}

/**
 * The model of one journey step, after the server started the command's workflow: read the
 * previous document, save this one, then answer.
 */
export function journeyModel(step: JourneyStep): ScriptFn {
  return ({ body }) => {
    // Tool results so far in this turn: the server's execute_workflow first, then the model's own calls.
    const done = currentTurn(body).filter((m) => m.role === 'tool').length;
    const plan = [
      ...(step.reads ? [reply.toolCalls([{ name: 'read_file', arguments: { file_path: step.reads } }])] : []),
      reply.toolCalls([{ name: 'save_output', arguments: { file_path: step.writes, content: step.text } }]),
    ];
    return plan[done - 1] ?? reply.text(`Done with ${lastUserText(body)}.`);
  };
}

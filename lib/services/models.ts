import type { Caller } from '../core/access';
import { getRuntime } from '../engine/runtime';
import { modelsView } from './presenters/models';
import type { ModelsData } from '../../types/api';

/** The model profiles a turn can use (whoever is signed in): never a key, never an endpoint address. */
export function listModels(_caller: Caller): ModelsData {
  return modelsView(getRuntime().config.models);
}

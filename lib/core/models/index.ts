export {
  defaultContextWindow,
  envSetup,
  loadModelSetup,
  loadModelsFile,
  ModelsFileError,
  normaliseCommandKey,
  PROFILE_NAME,
  UNKNOWN_MODEL_WINDOW,
  type ModelPrice,
  type ModelProfile,
  type ModelSetup,
  type TokenizerName,
} from './profiles';
export { costOf, routeProfile, type ProfileChoice, type ProfileSource, type RouteInput } from './routing';

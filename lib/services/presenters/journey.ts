import type { Journey, JourneyDocument, JourneyPhase, JourneyStep } from '../../content/projects';
import type { JourneyDocument as JourneyDocumentView, JourneyPhase as JourneyPhaseView, JourneyStep as JourneyStepView, ProjectJourney } from '../../../types/api';
import type { Assert, NoExtraFields } from './fields';

type _Journey = Assert<NoExtraFields<Journey, ProjectJourney>>;
type _Phase = Assert<NoExtraFields<JourneyPhase, JourneyPhaseView>>;
type _Document = Assert<NoExtraFields<JourneyDocument, JourneyDocumentView>>;
type _Step = Assert<NoExtraFields<JourneyStep, JourneyStepView>>;

/** Where a project stands on its journey, as the API shows it. */
export function journeyView(journey: Journey): ProjectJourney {
  return journey;
}

export { emitProjectEvent, subscribeProjectEvents, unsubscribeProjectEvents, setEventRelay, dropEventRelay, eventOf, type ProjectEvent, type ProjectEventInput, type ProjectEventListener, type EventRelay } from './bus';
export { PgEventRelay, EVENTS_CHANNEL } from './pg-relay';

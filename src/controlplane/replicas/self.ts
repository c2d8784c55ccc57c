/** This process as a control-plane replica: its id, release, schema and the policy features it serves. */
export type SelfReplica = { id: string; version: string; schema: string; policyFeatures: string[] };

/** A reason the container does not start: printed as its last line, exit code 1 (spec §7). */
export class StartFailure extends Error {
  override name = "StartFailure";
}

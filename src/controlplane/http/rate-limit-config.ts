// The sign-in and login-request limits as configuration: plain values, apart from the limiters
// (rate-limit.ts) so the control plane's deps can name them without importing the limiters.
export type RateLimitConfig = {
  /** Failed password sign-ins per email within the window. */
  signInFailuresPerEmail: number;
  /** Failed password sign-ins per client IP within the window. */
  signInFailuresPerIp: number;
  signInWindowSeconds: number;
  /** Unauthenticated `svc login` requests created per client IP within the window. */
  loginRequestsPerIp: number;
  loginRequestWindowSeconds: number;
};

export const DEFAULT_RATE_LIMITS: RateLimitConfig = {
  signInFailuresPerEmail: 10,
  signInFailuresPerIp: 50,
  signInWindowSeconds: 15 * 60,
  loginRequestsPerIp: 30,
  loginRequestWindowSeconds: 15 * 60,
};

// Scalar renders /api/openapi.json; no default fonts (they come from a CDN) and no telemetry.
Scalar.createApiReference('#app', {
  url: '/api/openapi.json',
  withDefaultFonts: false,
  telemetry: false,
  hideClientButton: true,
  showDeveloperTools: 'never',
  agent: { disabled: true },
});

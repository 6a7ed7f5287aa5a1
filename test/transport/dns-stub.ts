// The stub lives with the benchmarks (which start it for the inbound port too); tests share it.
export { startDnsStub, type Records } from '../../bench/lib/dns-stub.js';

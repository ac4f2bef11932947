// The compiled CLI's entry (scripts/build-cli.mjs bundles it as lib/peakscope.mjs; bin/peakscope.mjs
// imports it in an installed package).
import { main } from "./main";

process.exitCode = await main(process.argv.slice(2));

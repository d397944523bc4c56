#!/usr/bin/env bash
# Refreshes the charting library embedded in report.html from npm.
#
#   cd metrics/htmlreport/npm
#   npm install uplot@<version> --save-exact   # to change the version
#   ./update.sh                                # reinstall from the lock file and copy the files
#
# The files copied into ../assets are what the Go package embeds
# (go:embed); node_modules is not committed.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund
mkdir -p ../assets
cp node_modules/uplot/dist/uPlot.iife.min.js ../assets/uPlot.iife.min.js
cp node_modules/uplot/dist/uPlot.min.css ../assets/uPlot.min.css
cp node_modules/uplot/LICENSE ../assets/uPlot.LICENSE
version=$(node -p 'require("./node_modules/uplot/package.json").version')
echo "$version" > ../assets/uPlot.VERSION
echo "uPlot $version copied into ../assets"

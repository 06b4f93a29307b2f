// Opens a kdsim HTML report in headless Chromium (Debian's /usr/bin/chromium, driven by
// playwright-core from the build's web/node_modules) and checks what a reader would see: every
// figure the page declares rendered as SVG with marks, no console error, no page error, no
// request leaving the file (the page must work offline). Optionally keeps a screenshot and
// writes each figure as SVG and PNG (tools/report_figures.sh).
//   node tools/report_render.mjs --web BUILD/web REPORT.html [--screenshot PNG] [--figures DIR] [--chromium PATH]
// Prints "declared N rendered N errors 0 render_ms T" and exits 1 on any failure.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';

const args = process.argv.slice(2);
const opt = (name, dflt) => { const i = args.indexOf(name); if (i < 0) return dflt; const v = args[i + 1]; args.splice(i, 2); return v; };
const web = opt('--web');
const screenshot = opt('--screenshot');
const figures = opt('--figures');
const chromium = opt('--chromium', process.env.KDSIM_CHROMIUM || '/usr/bin/chromium');
const report = args[0];
if (!web || !report) { console.error('usage: render.mjs --web BUILD/web REPORT.html [--screenshot PNG] [--figures DIR]'); process.exit(2); }
const { chromium: driver } = createRequire(path.join(path.resolve(web), 'package.json'))('playwright-core');

const failures = [];
const browser = await driver.launch({ executablePath: chromium, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.on('console', m => { if (m.type() === 'error') failures.push('console error: ' + m.text()); });
  page.on('pageerror', e => failures.push('page error: ' + e.message));
  const url = 'file://' + path.resolve(report);
  await page.route('**/*', r => { if (r.request().url() === url) return r.continue(); failures.push('request off the file: ' + r.request().url()); return r.abort(); });
  const t0 = Date.now();
  await page.goto(url, { waitUntil: 'load', timeout: 60000 });
  await page.waitForFunction(() => window.kdsimReport && window.kdsimReport.done, null, { timeout: 60000 });
  const renderMs = Date.now() - t0;
  const state = await page.evaluate(() => {
    const r = window.kdsimReport;
    const figs = JSON.parse(document.getElementById('kdsim-figures').textContent);
    return { declared: r.declared, rendered: r.rendered.length, errors: r.errors,
             figures: figs.map(f => ({ id: f.id, file: f.file, title: f.title,
                                       marks: document.querySelectorAll('#' + f.id + ' svg .role-mark > *').length,
                                       plots: document.querySelectorAll('.plot').length })) };
  });
  failures.push(...state.errors.map(e => 'figure failed: ' + e));
  if (state.declared === 0) failures.push('the report declares no figure');
  if (state.rendered !== state.declared) failures.push(`rendered ${state.rendered} of ${state.declared} figures`);
  for (const f of state.figures) if (f.marks === 0) failures.push(`${f.id} (${f.title}) has no marks`);
  if (state.figures.length && state.figures[0].plots !== state.declared) failures.push(`${state.figures[0].plots} plot elements for ${state.declared} figures`);
  if (screenshot) { fs.mkdirSync(path.dirname(path.resolve(screenshot)), { recursive: true }); await page.screenshot({ path: screenshot, fullPage: true }); }
  if (figures) {
    fs.mkdirSync(figures, { recursive: true });
    for (const f of state.figures) {
      const [svg, png] = await page.evaluate(async id => {
        const v = window.kdsimReport.views[id];
        return [await v.toSVG(), await v.toImageURL('png', 2)];
      }, f.id);
      fs.writeFileSync(path.join(figures, f.file + '.svg'), svg);
      fs.writeFileSync(path.join(figures, f.file + '.png'), Buffer.from(png.split(',')[1], 'base64'));
    }
  }
  console.log(`declared ${state.declared} rendered ${state.rendered} errors ${failures.length} render_ms ${renderMs}`);
} finally {
  await browser.close();
}
for (const f of failures) console.error('FAIL: ' + f);
process.exit(failures.length ? 1 : 0);

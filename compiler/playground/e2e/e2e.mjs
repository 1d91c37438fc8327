// End-to-end test of the spmdc playground in a real browser: Debian's Chromium,
// headless, driven by playwright-core. .ci/run runs it after the build:
//
//   node compiler/playground/e2e/e2e.mjs [path/to/spmdc]
//
// It starts `spmdc playground --port 0`, loads the page, picks the saxpy example,
// breaks the program and checks the underline and the message, fixes it, runs it on
// nyuzi and on dac-gpu checking the values shown, checks that the heat map renders
// and that the mask trace steps, and saves screenshots in target/playground-e2e/.
// Any failure (Chromium missing included) exits non-zero with the reason.

import { spawn } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const spmdc = process.argv[2] ?? join(root, "target/release/spmdc");
const shots = join(root, "target/playground-e2e");
const browserPath = process.env.CHROMIUM ?? "/usr/bin/chromium";
const TIMEOUT = 60_000;

function fail(message) {
  console.error(`playground e2e: FAILED: ${message}`);
  process.exit(1);
}

/// Starts the server on a free port; resolves with its URL (printed on stderr).
function startServer() {
  if (!existsSync(spmdc)) fail(`no spmdc binary at ${spmdc} (build it first)`);
  const server = spawn(spmdc, ["playground", "--port", "0"], { stdio: ["ignore", "ignore", "pipe"] });
  return new Promise((resolveUrl, reject) => {
    let seen = "";
    server.stderr.on("data", (chunk) => {
      seen += chunk;
      const m = seen.match(/http:\/\/[0-9.]+:\d+\//);
      if (m) resolveUrl({ server, url: m[0] });
    });
    server.on("exit", (code) => reject(new Error(`spmdc playground exited (${code}): ${seen}`)));
  });
}

async function expectText(page, selector, pattern, what) {
  try {
    await page.waitForFunction(
      ([sel, src]) => new RegExp(src).test(document.querySelector(sel)?.textContent ?? ""),
      [selector, pattern.source],
      { timeout: TIMEOUT },
    );
  } catch (e) {
    const got = await page.textContent(selector).catch(() => "(missing)");
    fail(`${what}: ${selector} never matched ${pattern}; it shows:\n${got}`);
  }
}

async function run(page, target, expected) {
  await page.selectOption("#target", target);
  await page.click("#run");
  await expectText(page, "#status", new RegExp(`ran on ${target}|failed`), `the run on ${target} ends`);
  await expectText(page, "#status", new RegExp(`ran on ${target}`), `the run on ${target} succeeds`);
  await expectText(page, "#run-out", expected, `the values of the run on ${target}`);
}

async function main() {
  if (!existsSync(browserPath)) {
    fail(`Chromium is not installed at ${browserPath} (apt-get install chromium, or set CHROMIUM)`);
  }
  mkdirSync(shots, { recursive: true });
  const { server, url } = await startServer();
  const browser = await chromium.launch({ executablePath: browserPath, headless: true, args: ["--no-sandbox"] });
  try {
    const page = await browser.newPage({ viewport: { width: 1500, height: 900 } });
    page.on("pageerror", (e) => fail(`the page threw: ${e.message}`));
    await page.goto(url);

    // Pick an example: saxpy, with the launch from its header.
    await page.waitForSelector("#example option[value]", { state: "attached", timeout: TIMEOUT });
    const saxpy = await page.$eval("#example", (s) => [...s.options].find((o) => o.text === "saxpy.spmd")?.value);
    if (saxpy === undefined) fail("the gallery has no saxpy.spmd");
    await page.selectOption("#example", saxpy);
    await expectText(page, "#status", /^compiled$/, "the example compiles");
    const entry = await page.inputValue("#entry");
    if (entry !== "saxpy") fail(`the example's launch entry is ${entry}`);

    // Break it: the underline and the message appear.
    const good = await page.inputValue("#source");
    const broken = good.replace("y[i] = a * x[i] + y[i];", "y[i] = a * x[i] + ;");
    if (broken === good) fail("the saxpy example changed: its statement is not where the test expects");
    await page.fill("#source", broken);
    await page.waitForSelector("#overlay .err", { timeout: TIMEOUT });
    await expectText(page, "#diagnostics li.error", /expected/, "the diagnostic's message");
    const underlined = await page.$eval("#overlay .err", (e) => e.closest(".line").dataset.line);
    const box = await page.$eval(`#overlay .line[data-line="${underlined}"]`, (e) => {
      const r = e.getBoundingClientRect();
      return { x: r.left + 20, y: r.top + r.height / 2 };
    });
    await page.mouse.move(box.x, box.y);
    const title = await page.getAttribute("#source", "title");
    if (!/error: expected/.test(title ?? "")) fail(`hovering the underlined line shows ${JSON.stringify(title)}`);
    await page.screenshot({ path: join(shots, "diagnostic.png") });

    // Fix it, run on both machines.
    await page.fill("#source", good);
    await expectText(page, "#status", /^compiled$/, "the fixed program compiles");
    if (await page.$("#overlay .err")) fail("the underline stays after the fix");
    await page.check("#timing");
    await run(page, "nyuzi", /y = \[1, 3, 5, 7, 9/);
    await run(page, "dac-gpu", /y = \[1, 3, 5, 7, 9/);

    // The heat map and the profile.
    const heated = await page.$$eval("#overlay .line[style*='background']", (l) => l.length);
    if (heated < 2) fail(`the heat map colours ${heated} lines`);
    await page.click('#tabs button[data-tab="profile"]');
    await expectText(page, "#profile", /total/, "the profile table");
    await page.screenshot({ path: join(shots, "playground.png") });

    // The mask trace steps forward and back.
    await page.click('#tabs button[data-tab="trace"]');
    await expectText(page, "#step-label", /step 1 of \d+/, "the trace's first step");
    const lanes = await page.$$eval("#lanes .lane", (l) => l.length);
    if (lanes !== 32) fail(`the dac-gpu warp shows ${lanes} lanes`);
    await page.click("#step-fwd");
    await page.click("#step-fwd");
    await expectText(page, "#step-label", /step 3 of/, "two steps forward");
    await page.click("#step-back");
    await expectText(page, "#step-label", /step 2 of/, "one step back");
    await page.screenshot({ path: join(shots, "trace.png") });
    console.log(`playground e2e: passed (screenshots in ${shots})`);
  } finally {
    await browser.close();
    server.kill();
  }
}

main().catch((e) => fail(e.stack ?? String(e)));

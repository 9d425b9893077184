//! The game viewer in a real browser: `replay --html` opened in headless Chromium (Debian's
//! `chromium`), stepped through by key events, what the page shows checked against the
//! game (`replay --json --steps`), and the console free of errors.
//!
//! Chromium is driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`:
//! JSON messages separated by NUL bytes, commands on its fd 3, replies on its fd 4), so the
//! test needs no crate beyond the binary's own. Where chromium is missing the test says so
//! and passes, except under CI (`CI` or `MMZ_REQUIRE_CHROMIUM` set, as `.ci/run` does after
//! installing chromium), where it fails.
//! `MMZ_CHROMIUM` names another browser binary; `MMZ_VIEWER_SHOTS=DIR` also writes
//! screenshots of the two pages into DIR.

mod common;

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("MMZ_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// A browser driven over the DevTools pipe.
struct Browser {
    child: Child,
    stdin: ChildStdin,
    rx: Receiver<Value>,
    next_id: u64,
    session: Option<String>,
    /// Console errors and exceptions seen so far.
    errors: Vec<String>,
    profile: PathBuf,
}

impl Browser {
    fn launch(bin: &Path) -> Browser {
        let profile =
            std::env::temp_dir().join(format!("mmz-viewer-profile-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&profile);
        std::fs::create_dir_all(&profile).unwrap();
        // The shell hands the browser our pipes as its fds 3 (commands) and 4 (replies).
        let script = "exec \"$0\" \"$@\" 3<&0 4>&1 </dev/null >/dev/null";
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(script)
            .arg(bin)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--remote-debugging-pipe",
                "--window-size=1500,1100",
                &format!("--user-data-dir={}", profile.display()),
                "about:blank",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromium starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            loop {
                let mut buf = Vec::new();
                match r.read_until(0, &mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        buf.pop();
                        if let Ok(v) = serde_json::from_slice::<Value>(&buf) {
                            if tx.send(v).is_err() {
                                return;
                            }
                        }
                    }
                }
            }
        });
        Browser {
            child,
            stdin,
            rx,
            next_id: 1,
            session: None,
            errors: Vec::new(),
            profile,
        }
    }

    /// Notes the errors an event reports.
    fn note(&mut self, v: &Value) {
        let method = v["method"].as_str().unwrap_or("");
        let p = &v["params"];
        match method {
            "Runtime.exceptionThrown" => self.errors.push(format!("exception: {}", p)),
            "Runtime.consoleAPICalled"
                if matches!(p["type"].as_str(), Some("error") | Some("assert")) =>
            {
                self.errors
                    .push(format!("console.{}: {}", p["type"], p["args"]))
            }
            "Log.entryAdded" if p["entry"]["level"] == "error" => {
                self.errors.push(format!("log: {}", p["entry"]["text"]))
            }
            _ => {}
        }
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = &self.session {
            msg["sessionId"] = s.clone().into();
        }
        let mut bytes = msg.to_string().into_bytes();
        bytes.push(0);
        self.stdin.write_all(&bytes).unwrap();
        self.stdin.flush().unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self
                .rx
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no reply to {method} within 60 s"));
            if v["id"] == id {
                assert!(v.get("error").is_none(), "{method}: {}", v["error"]);
                return v["result"].clone();
            }
            self.note(&v);
        }
    }

    /// Opens `url` in a new page and attaches to it.
    fn open(&mut self, url: &str) {
        self.session = None;
        let target = self.call("Target.createTarget", json!({ "url": "about:blank" }));
        let attached = self.call(
            "Target.attachToTarget",
            json!({ "targetId": target["targetId"], "flatten": true }),
        );
        self.session = Some(attached["sessionId"].as_str().unwrap().to_string());
        for domain in ["Runtime.enable", "Log.enable", "Page.enable"] {
            self.call(domain, json!({}));
        }
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": 1500, "height": 1100, "deviceScaleFactor": 1, "mobile": false }),
        );
        self.call("Page.navigate", json!({ "url": url }));
        let t0 = Instant::now();
        while self.eval("typeof window.mmzReady === 'number'") != json!(true) {
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "the viewer did not finish drawing within 30 s: {:?}",
                self.errors
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn eval(&mut self, expr: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({ "expression": expr, "returnByValue": true }),
        );
        assert!(
            r.get("exceptionDetails").is_none(),
            "{expr}: {}",
            r["exceptionDetails"]
        );
        r["result"]["value"].clone()
    }

    fn text(&mut self, id: &str) -> String {
        let v = self.eval(&format!(
            "(document.getElementById('{id}') || {{textContent: '<no #{id}>'}}).textContent"
        ));
        v.as_str().unwrap_or_default().to_string()
    }

    /// A real key press (down and up), as a person's keyboard sends it.
    fn key(&mut self, key: &str, code: u32) {
        for kind in ["rawKeyDown", "keyUp"] {
            self.call(
                "Input.dispatchKeyEvent",
                json!({ "type": kind, "key": key, "code": key,
                        "windowsVirtualKeyCode": code, "nativeVirtualKeyCode": code }),
            );
        }
    }

    fn screenshot(&mut self, path: &Path) {
        let r = self.call(
            "Page.captureScreenshot",
            json!({ "format": "png", "captureBeyondViewport": true }),
        );
        let data = decode_base64(r["data"].as_str().unwrap());
        std::fs::write(path, data).unwrap();
    }

    /// Lets pending events in, then returns the errors seen.
    fn drain_errors(&mut self) -> Vec<String> {
        self.eval("1");
        while let Ok(v) = self.rx.try_recv() {
            self.note(&v);
        }
        std::mem::take(&mut self.errors)
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        self.session = None;
        let id = self.next_id;
        let mut bytes = json!({ "id": id, "method": "Browser.close" })
            .to_string()
            .into_bytes();
        bytes.push(0);
        let _ = self.stdin.write_all(&bytes);
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = self.child.try_wait() {
                let _ = std::fs::remove_dir_all(&self.profile);
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

fn decode_base64(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    } as u32;
    let clean: Vec<u8> = s.bytes().filter(|&c| c != b'=' && c != b'\n').collect();
    let mut out = Vec::with_capacity(clean.len() * 3 / 4);
    for chunk in clean.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= val(c) << (18 - 6 * i);
        }
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..chunk.len() - 1]);
    }
    out
}

fn json_of(args: &[&str]) -> Value {
    let (code, out, err) = common::run(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    serde_json::from_str(out.lines().last().unwrap_or("")).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// The number in a text like `S so far: 1234.567 µs`.
fn micros(text: &str) -> f64 {
    let n: String = text
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    n.parse()
        .unwrap_or_else(|_| panic!("no number in {text:?}"))
}

#[test]
fn the_viewer_steps_through_a_game_in_chromium() {
    let Some(bin) = chromium() else {
        let set = |v: &str| std::env::var(v).is_ok_and(|v| !v.is_empty() && v != "false");
        assert!(
            !set("CI") && !set("MMZ_REQUIRE_CHROMIUM"),
            "chromium is missing, and CI (or MMZ_REQUIRE_CHROMIUM) requires it: `.ci/run` installs Debian's chromium; MMZ_CHROMIUM names another browser binary"
        );
        eprintln!(
            "SKIPPED the_viewer_steps_through_a_game_in_chromium: no chromium on PATH \
             (apt-get install chromium, or set MMZ_CHROMIUM); CI fails here instead"
        );
        return;
    };
    let dir = std::env::temp_dir().join(format!("mmz-viewer-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.display().to_string();
    for player in ["greedy", "xla"] {
        let v = json_of(&[
            "play",
            "--workload",
            "resnet50",
            "--player",
            player,
            "--save",
            &d,
            "--json",
        ]);
        assert_eq!(v["best"]["valid"], true);
    }
    let greedy = dir.join("resnet50-tpu-v4i-like-greedy-0.game");
    let xla = dir.join("resnet50-tpu-v4i-like-xla-0.game");
    let page = dir.join("greedy.html");
    let (g, p) = (greedy.display().to_string(), page.display().to_string());
    let steps = json_of(&["replay", &g, "--steps", "--html", &p, "--json"]);
    let turns = steps["turns"].as_array().unwrap().clone();
    assert!(turns.len() > 12, "{}", turns.len());
    assert!(steps["html"]["left_out"].as_array().unwrap().is_empty());

    let mut browser = Browser::launch(&bin);
    browser.open(&format!("file://{p}"));
    let check = |b: &mut Browser, t: usize| {
        let want = &turns[t];
        assert_eq!(b.text("turn-index"), format!("turn {t} of {}", turns.len()));
        assert_eq!(b.text("turn-buffer"), want["buffer"].as_str().unwrap());
        assert_eq!(b.text("turn-action"), want["action_name"].as_str().unwrap());
        let shown = micros(&b.text("turn-latency"));
        let latency = want["latency_s"].as_f64().unwrap() * 1e6;
        assert!(
            (shown - latency).abs() <= 1e-3 + 1e-6 * latency,
            "turn {t}: the page shows {shown} us, the game {latency} us"
        );
        // The slider follows the keys.
        assert_eq!(
            b.eval("document.getElementById('slider').value"),
            json!(t.to_string())
        );
    };
    check(&mut browser, 0);
    for t in 1..=8 {
        browser.key("ArrowRight", 39);
        check(&mut browser, t);
    }
    browser.key("ArrowLeft", 37);
    check(&mut browser, 7);
    browser.key("End", 35);
    check(&mut browser, turns.len() - 1);
    browser.key("Home", 36);
    check(&mut browser, 0);
    // The map is drawn, and the turn's alternatives list the action taken.
    assert!(
        browser
            .eval("document.getElementById('map').height")
            .as_u64()
            .unwrap()
            > 100
    );
    let taken = browser.eval("document.querySelector('#alts tr.taken td').textContent");
    assert!(taken.as_str().unwrap().contains("taken"), "{taken}");
    browser.key("PageDown", 34);
    check(&mut browser, 100);
    // Jump to a buffer: the next turn of the buffer named in the box.
    let name = turns[150]["buffer"].as_str().unwrap().to_string();
    let want = (101..turns.len())
        .chain(0..=100)
        .find(|&t| turns[t]["buffer"] == name.as_str())
        .unwrap();
    browser.eval(&format!(
        "(() => {{ const b = document.getElementById('goto-buffer'); b.value = {}; b.focus(); }})()",
        json!(name)
    ));
    browser.key("Enter", 13);
    check(&mut browser, want);
    if let Some(shots) = std::env::var_os("MMZ_VIEWER_SHOTS") {
        browser.screenshot(&Path::new(&shots).join("viewer.png"));
    }
    let errors = browser.drain_errors();
    assert!(errors.is_empty(), "console errors: {errors:?}");

    // The comparison: greedy (A) against xla (B).
    let cmp_page = dir.join("compare.html");
    let c = cmp_page.display().to_string();
    let x = xla.display().to_string();
    let v = json_of(&["replay", &g, "--compare", &x, "--html", &c, "--json"]);
    let n = v["html"]["differences"].as_u64().unwrap();
    assert!(n >= 2, "{v}");
    let first = v["html"]["first_difference"].as_u64().unwrap();
    browser.open(&format!("file://{c}"));
    let shown = browser.text("cmp-first");
    assert!(
        shown.contains(&format!("first difference at turn {first}")),
        "{shown}"
    );
    assert_eq!(browser.text("diff-index"), format!("difference 1 of {n}"));
    browser.key("ArrowRight", 39);
    assert_eq!(browser.text("diff-index"), format!("difference 2 of {n}"));
    assert!(browser.text("diff-cost").contains("µs"));
    // Sorted by cost, A's largest saving comes first.
    browser.eval("document.getElementById('sort').click()");
    assert_eq!(browser.text("diff-index"), format!("difference 1 of {n}"));
    let costs = browser.eval(
        "[...document.querySelectorAll('#diffs tbody tr td:nth-child(2)')].map(td => td.textContent)",
    );
    let costs: Vec<f64> = costs
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let c = c.as_str().unwrap();
            let sign = if c.starts_with('\u{2212}') { -1.0 } else { 1.0 };
            sign * micros(c)
        })
        .collect();
    assert_eq!(costs.len() as u64, n);
    assert!(costs.windows(2).all(|w| w[0] <= w[1]), "{costs:?}");
    assert!(
        costs[0] < 0.0,
        "greedy saves somewhere against xla: {costs:?}"
    );
    if let Some(shots) = std::env::var_os("MMZ_VIEWER_SHOTS") {
        browser.screenshot(&Path::new(&shots).join("compare.png"));
    }
    let errors = browser.drain_errors();
    assert!(errors.is_empty(), "console errors: {errors:?}");
    // The console watch itself: a page that throws and logs an error is caught.
    let bad = dir.join("bad.html");
    std::fs::write(
        &bad,
        "<script>window.mmzReady = 1; console.error('logged'); null.x;</script>",
    )
    .unwrap();
    browser.open(&format!("file://{}", bad.display()));
    let errors = browser.drain_errors();
    assert!(
        errors.iter().any(|e| e.contains("logged"))
            && errors.iter().any(|e| e.contains("exception")),
        "{errors:?}"
    );
    drop(browser);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Opening times of the pages named in `MMZ_VIEWER_TIME` (comma-separated): the time from
/// navigation to the first picture drawn, as the page measures it. Run by hand:
/// `MMZ_VIEWER_TIME=a.html,b.html cargo test --release -p mallocmuzero --test
/// viewer_browser -- --ignored --nocapture`.
#[test]
#[ignore]
fn opening_times() {
    let (Some(bin), Ok(pages)) = (chromium(), std::env::var("MMZ_VIEWER_TIME")) else {
        eprintln!("set MMZ_VIEWER_TIME and install chromium");
        return;
    };
    let mut browser = Browser::launch(&bin);
    for page in pages.split(',') {
        let bytes = std::fs::metadata(page).map(|m| m.len()).unwrap_or(0);
        let mut best = f64::INFINITY;
        for _ in 0..3 {
            browser.open(&format!("file://{page}"));
            let ms = browser.eval("window.mmzReady").as_f64().unwrap();
            best = best.min(ms);
        }
        browser.key("ArrowRight", 39);
        let t0 = Instant::now();
        for _ in 0..20 {
            browser.key("ArrowRight", 39);
            browser.call(
                "Runtime.evaluate",
                json!({ "expression": "new Promise(r => requestAnimationFrame(() => r(1)))",
                        "awaitPromise": true }),
            );
        }
        let step_ms = t0.elapsed().as_secs_f64() * 1e3 / 20.0;
        let errors = browser.drain_errors();
        println!(
            "{page}: {:.1} KiB, first picture {best:.0} ms after navigation (best of 3), a step {step_ms:.0} ms, errors {errors:?}",
            bytes as f64 / 1024.0
        );
    }
}

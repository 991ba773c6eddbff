//! `nmt shortlist`, `nmt quantize` and `translate --shortlist --int8` through the real binary:
//! training ends with a shortlist in the model file; `nmt shortlist` replaces it; the int8 file
//! is smaller, translates as `--int8` does, and keeps the shortlist; a model without one, or a
//! model file that is not one, is refused with a clear error; written files are readable by
//! others (not tempfile's private mode).
mod common;

use common::{fails_with, nmt, train};

fn ok(out: &std::process::Output) -> String {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[test]
fn shortlist_quantize_and_translate() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let words = ["a b c", "b c d", "c d e", "d e a", "e a b"];
    let src: String = words.iter().cycle().take(40).map(|w| format!("{w}\n")).collect();
    std::fs::write(d.join("t.src"), &src).unwrap();
    std::fs::write(d.join("t.tgt"), src.to_uppercase()).unwrap();
    let out = train(d, "t.src", "t.tgt");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let m = d.join("m/model.safetensors");
    let ms = m.display().to_string();
    let input = b"a b c\nd e a\n";
    // Training stored a shortlist: --shortlist runs at once.
    let full = ok(&nmt(&["translate", "-m", &ms], Some(input)));
    let short = ok(&nmt(&["translate", "-m", &ms, "--shortlist"], Some(input)));
    assert_eq!(full.lines().count(), 2);
    assert_eq!(short.lines().count(), 2);
    // nmt shortlist rewrites it; the weights stay as they were.
    let (s, t) = (d.join("t.src").display().to_string(), d.join("t.tgt").display().to_string());
    ok(&nmt(&["shortlist", "-m", &ms, "--src", &s, "--tgt", &t, "-k", "2", "--frequent", "0"], None));
    assert_eq!(ok(&nmt(&["translate", "-m", &ms], Some(input))), full);
    assert_eq!(ok(&nmt(&["translate", "-m", &ms, "--shortlist"], Some(input))).lines().count(), 2);
    // The int8 file: smaller, int8 by default, the same as --int8, the shortlist kept.
    let q = d.join("m/model.int8.safetensors");
    let qs = q.display().to_string();
    ok(&nmt(&["quantize", "-m", &ms, "-o", &qs], None));
    assert!(std::fs::metadata(&q).unwrap().len() < std::fs::metadata(&m).unwrap().len());
    let args = |model: &str, extra: &[&str]| -> Vec<String> {
        let mut v = vec!["translate".to_string(), "-m".into(), model.into(), "--n-best".into(), "3".into()];
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let run = |a: Vec<String>| ok(&nmt(&a.iter().map(String::as_str).collect::<Vec<_>>(), Some(input)));
    assert_eq!(run(args(&qs, &[])), run(args(&ms, &["--int8"])));
    assert_eq!(run(args(&qs, &["--shortlist"])), run(args(&ms, &["--int8", "--shortlist"])));
    // Written as `File::create` writes: 0666 less the umask (Linux reports it in /proc).
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::PermissionsExt;
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let umask = status.lines().find_map(|l| l.strip_prefix("Umask:")).and_then(|v| u32::from_str_radix(v.trim(), 8).ok());
        for f in [&m, &q] {
            let mode = std::fs::metadata(f).unwrap().permissions().mode() & 0o777;
            if let Some(u) = umask {
                assert_eq!(mode, 0o666 & !u, "{}: mode {mode:o}, umask {u:o}", f.display());
            }
        }
    }
    // A model file that is not one, and a model without a shortlist.
    std::fs::write(d.join("bad.safetensors"), b"nope").unwrap();
    let bad = d.join("bad.safetensors").display().to_string();
    fails_with(&nmt(&["shortlist", "-m", &bad, "--src", &s, "--tgt", &t], None), &["bad.safetensors"]);
    fails_with(&nmt(&["quantize", "-m", &bad, "-o", &qs], None), &["bad.safetensors"]);
    let ckpt = d.join("m/checkpoint.safetensors").display().to_string();
    fails_with(&nmt(&["translate", "-m", &ckpt, "--shortlist"], Some(input)), &["no lexical shortlist"]);
}

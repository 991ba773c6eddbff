//! `nmt`: the command-line tool. Thin: parse flags, set up logging, call the library.
use clap::{Parser, Subcommand};

mod cmd;
mod collective;

/// mimalloc keeps freed tensor buffers for reuse (see Cargo.toml).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(name = "nmt", version, about = "RNN encoder-decoder neural machine translation (RNNenc, RNNsearch)")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Train rnnsearch-small on the bundled English→Spanish corpus, then report and translate.
    Demo(cmd::demo::DemoArgs),
    /// Encode a config's training corpora once into memory-mapped shards (`train --data DIR`).
    Prepare(cmd::prepare::PrepareArgs),
    /// Train (or resume) a model from a TOML config.
    Train(cmd::train::TrainArgs),
    /// Translate stdin to stdout, one sentence per line.
    Translate(cmd::translate::TranslateArgs),
    /// Learn a lexical shortlist from training pairs into a model file (`translate --shortlist`).
    Shortlist(cmd::shortlist::ShortlistArgs),
    /// Store a model's matrices in int8 (a quarter of the size; translates with --int8).
    Quantize(cmd::quantize::QuantizeArgs),
    /// Convert a model trained by another toolkit (Marian's `s2s`) into an nmt model file.
    Convert(cmd::convert::ConvertArgs),
    /// Score given translations: log p(target | source) per `source<TAB>target` line, or a
    /// Moses phrase table's pairs as a new feature column.
    Score(cmd::score::ScoreArgs),
    /// Add the model's score to Moses n-best lists as a feature, and re-rank them.
    Rescore(cmd::rescore::RescoreArgs),
    /// Phrase vectors (RNNenc's summary, RNNsearch's final encoder states) as TSV or .npy,
    /// and a labelled 2-D map.
    Embed(cmd::embed::EmbedArgs),
    /// Translation server: LibreTranslate-compatible and full JSON APIs, a web page with the
    /// attention heatmap.
    Serve(cmd::serve::ServeArgs),
    /// BLEU, chrF and BLEU by sentence length.
    Eval(cmd::eval::EvalArgs),
    /// Average the weights of several model files of one run (checkpoint averaging).
    Average(cmd::average::AverageArgs),
    /// Attention pictures and training curves.
    Plot(cmd::plot::PlotArgs),
    /// Speed of a preset (bench-rnnsearch by default): training step, greedy and beam-5 search, GEMM rate.
    Bench(cmd::bench::BenchArgs),
}

fn main() -> std::process::ExitCode {
    // Keep freed memory instead of returning it to the OS: re-faulting (and zeroing) large
    // tensor buffers every step cost ~5 % of a bench training step (12 500 page faults per run
    // → 540 with this). SAFETY: sets a process-wide allocator option before any other thread.
    // `mi_option_purge_delay` is 15 in mimalloc's v2 and v3 headers; libmimalloc-sys 0.1
    // does not export a constant for it.
    const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
    // A closed stdout (`nmt eval bleu … | head -1`) ends the program quietly, as Unix filters
    // do: Rust ignores SIGPIPE, and `println!` would panic on the broken pipe.
    // SAFETY: restores one signal's default disposition before any other thread starts.
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // candle attaches a backtrace to its errors whenever backtraces are on, so under
    // RUST_BACKTRACE=1 a one-line `nmt: error:` came with dozens of frames. Error backtraces
    // follow RUST_LIB_BACKTRACE first (std's rule): off unless the user sets it. Panics keep
    // following RUST_BACKTRACE. (Set before any thread starts.)
    if std::env::var_os("RUST_LIB_BACKTRACE").is_none() {
        std::env::set_var("RUST_LIB_BACKTRACE", "0");
    }
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("NMT_LOG").unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        // Colour codes only on a terminal: a log redirected to a file stays plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .init();
    // A misspelt cap would silently run the full instruction sets: refuse it before any kernel
    // reads it (the library ignores what it cannot parse).
    let result = match nmt::cpu_cap_from_env() {
        Err(e) => Err(anyhow::anyhow!(e)),
        Ok(_) => run(cli.command),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // ripgrep style: the whole chain on one line.
            // A cause already quoted in the message before it (an I/O error whose text the
            // library's message includes) is not repeated.
            let mut chain: Vec<String> = Vec::new();
            for c in e.chain().map(|c| c.to_string()) {
                if !chain.last().is_some_and(|prev| prev.contains(&c)) {
                    chain.push(c);
                }
            }
            eprintln!("nmt: error: {}", chain.join(": "));
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Demo(a) => cmd::demo::run(a),
        Command::Prepare(a) => cmd::prepare::run(a),
        Command::Train(a) => cmd::train::run(a),
        Command::Translate(a) => cmd::translate::run(a),
        Command::Shortlist(a) => cmd::shortlist::run(a),
        Command::Quantize(a) => cmd::quantize::run(a),
        Command::Convert(a) => cmd::convert::run(a),
        Command::Score(a) => cmd::score::run(a),
        Command::Rescore(a) => cmd::rescore::run(a),
        Command::Embed(a) => cmd::embed::run(a),
        Command::Serve(a) => cmd::serve::run(a),
        Command::Eval(a) => cmd::eval::run(a),
        Command::Plot(a) => cmd::plot::run(a),
        Command::Average(a) => cmd::average::run(a),
        Command::Bench(a) => cmd::bench::run(a),
    }
}

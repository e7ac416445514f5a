//! Interim plans for a cold start. A tensor-core pipeline takes the NVIDIA driver 0.2–1.1 s to
//! compile cold (`docs/performance/sessions-39-42.md`), and a run cannot record a dispatch
//! before its pipeline exists, so a cold process's first result waited for the slowest of them
//! (issue 15). When a set is made while some of a step's pipelines are still compiling, the step
//! is also planned for the same device without tensor cores, in 64×64 tiles whose stores run in
//! one loop (`GemmOptions::quick_compile`: SIMT kernels the driver compiles in 0.05–0.15 s alone on
//! an H100, forty-eighth session), over the same buffers: its runs take those dispatches until the step's own
//! pipelines are ready, then drop them. The results are those of the SIMT plans: the same
//! operation at the same or better precision (f16 products accumulate in f32 either way; f32 ones
//! are exact f32 instead of split in three f16 products), not bit for bit the tensor cores'.
//! Option `interim_kernels` (on by default since the forty-sixth session: on an H100, Whisper-tiny
//! fp16's cold import-to-first-result fell from 1.70 s to 0.84 s, medians of three and six
//! processes, and warm processes did not change; `docs/performance/startup.md`). While a set runs interim
//! plans, nothing is bound in place (`direct.rs`): steps planned again for ORT's ranges take the
//! device's own pipelines and would wait for them. A tensor-core attention step takes its unfused
//! form (`ops/attention/unfused.rs`: two SIMT products and a softmax through Sq×Skv scratch)
//! where that form can express it, else none: the SIMT flash kernel ran Whisper-tiny's attentions
//! 45 times slower than the tensor cores, longer than waiting for their compile. A set
//! made with interim plans possible defers its tensor-core compiles until the others are done
//! (`runtime/compile_order.rs`), then promotes those of the steps left without an interim plan.

use super::{Executable, Prepared};
use crate::runtime::Dispatch;

impl Executable {
    /// For each step of `prepared` that dispatches a pipeline still compiling, its dispatches
    /// planned without tensor cores, where they avoid such a pipeline (a step on SIMT kernels
    /// alone is not planned again: its pipelines compile in milliseconds).
    pub(super) fn interim_steps(&self, prepared: &Prepared) -> Vec<(usize, Vec<Dispatch>)> {
        if !self.interim_possible() {
            return Vec::new();
        }
        let simt = self.gpu.caps().without_tensor_cores();
        // 64×64 tiles: on the H100 the 128×128 SIMT kernel with GELU's epilogue took the driver 853 ms
        // cold, as long as a tensor-core one; the 64×64 ones 141–243 ms.
        let gemm = crate::gemm::GemmOptions {
            tiling: crate::gemm::TilingChoice::Tile64,
            quick_compile: true,
            ..self.options.gemm
        };
        let options = super::ExecOptions { gemm, interim_plan: true, ..self.options };
        // The unfused attentions' scores, shared by its steps.
        let scratch = crate::ops::Scratch::default();
        let mut interim = Vec::new();
        for index in 0..prepared.steps.len() {
            let own = prepared.step_dispatches(index);
            if !own.iter().any(Dispatch::compiling_on_tensor_cores) {
                if crate::runtime::log_compiles() && !own.is_empty() {
                    eprintln!("ep-wgpu step {index} ({}) needs no interim plan", labels(own));
                }
                continue;
            }
            let why = match self.prepare_again(prepared, index, &[], &simt, &options, Some(&scratch)) {
                Ok(plan) if avoids_waiting(own, &plan) => {
                    if crate::runtime::log_compiles() {
                        eprintln!("ep-wgpu step {index} ({}) runs {} until compiled", labels(own), labels(&plan));
                    }
                    interim.push((index, plan));
                    continue;
                }
                Ok(plan) => format!("its plan without tensor cores waits too ({})", labels(&plan)),
                Err(e) => e.to_string(),
            };
            // The step waits for its own pipelines, as without interim plans.
            if crate::runtime::log_compiles() {
                eprintln!("ep-wgpu no interim plan for step {index} ({}): {why}", labels(own));
            }
        }
        if !interim.is_empty() {
            tracing::info!(
                target: "ep_wgpu",
                "{} step(s) run interim plans without tensor cores until their pipelines have compiled",
                interim.len()
            );
        }
        interim
    }
}

impl Executable {
    /// Whether this set's steps may get interim plans: the option is on and the device runs
    /// tensor-core kernels (real or emulated).
    pub(super) fn interim_possible(&self) -> bool {
        let caps = self.gpu.caps();
        self.options.interim && (caps.real_tensor_cores() || caps.coop_emulated)
    }
}

fn labels(dispatches: &[Dispatch]) -> String {
    dispatches.iter().map(|d| d.label.as_str()).collect::<Vec<_>>().join(" + ")
}

/// Whether `plan` leaves out the tensor-core pipelines of `own` that are still compiling.
fn avoids_waiting(own: &[Dispatch], plan: &[Dispatch]) -> bool {
    !plan.is_empty()
        && !plan.iter().any(Dispatch::compiling_on_tensor_cores)
        && own.iter().filter(|o| o.compiling_on_tensor_cores()).all(|o| !plan.iter().any(|d| d.same_pipeline(o)))
}

impl Prepared {
    /// Promotes the deferred compiles (`runtime/compile_order.rs`) of the steps without an
    /// interim plan: a run waits for them.
    pub(super) fn promote_waited_for(&self) {
        for index in 0..self.steps.len() {
            if !self.interim.iter().any(|(i, _)| *i == index) {
                self.step_dispatches(index).iter().for_each(Dispatch::promote);
            }
        }
    }

    /// Drops the interim dispatches of the steps whose own pipelines have all compiled. Until
    /// `grace` (option `interim_grace_ms`) after the set was made, a run first waits for those
    /// pipelines: the partitions of a session, made one after another, share about one window.
    pub(super) fn retire_interim(&mut self, grace: std::time::Duration) {
        if self.interim.is_empty() {
            return;
        }
        let deadline = self.made + grace;
        let waited = std::time::Instant::now();
        if waited < deadline {
            for (index, _) in &self.interim {
                for d in self.step_dispatches(*index) {
                    d.wait_until(deadline);
                }
            }
            crate::runtime::startup::record(crate::runtime::startup::Phase::PipelineWait, waited.elapsed(), 1);
        }
        let mut interim = std::mem::take(&mut self.interim);
        interim.retain(|(index, _)| self.step_dispatches(*index).iter().any(|d| !d.is_ready()));
        self.interim = interim;
    }
}

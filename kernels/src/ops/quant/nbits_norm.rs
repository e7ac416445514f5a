//! A SkipSimplifiedLayerNormalization folded into the MatMulNBits step that reads its output
//! (decode's QKV projection and SwiGLU's gate and up projections as onnxruntime-genai builds
//! them): one row on the one-row kernel makes A from the norm's input, skip and γ on the way and
//! stores their sum (one dispatch instead of two); other rows, or a device with too few storage
//! buffers, run the norm into a scratch buffer and then the product.

use super::*;

/// Storage buffers the one-row kernel binds with the norm folded: A (the norm's input), B, the
/// scales, bias and gate slots, skip, γ, Y and the sum; the up projection's B and scales on top.
const NORM_STORAGE: u32 = 9;

impl NbitsKernel {
    /// The product alone (A read as given).
    fn without_norm(&self) -> NbitsKernel {
        NbitsKernel { norm: None, ..self.clone() }
    }

    fn folded(&self) -> Result<&SkipNormKernel, GpuError> {
        self.norm.as_deref().ok_or_else(|| GpuError::Internal("no norm folded into this MatMulNBits".into()))
    }

    /// Whether `m` rows run on the one-row kernel with the norm folded: the product's planner
    /// takes that kernel, skip holds one row like the input, and the device binds enough buffers.
    fn norm_fused(&self, m: u64, skip_elems: u64, caps: &DeviceCaps) -> bool {
        let storage = NORM_STORAGE + 2 * u32::from(self.up.is_some());
        self.kind(m, caps) == NbitsKind::Lanes
            && self.lanes_can_run(m, caps)
            && skip_elems == m * self.k
            && caps.max_storage_buffers_per_stage >= storage
    }

    /// The product's inputs with A replaced by the norm's output (of the input's shape).
    fn product_inputs<'s>(inputs: &[Option<&'s [u64]>]) -> Vec<Option<&'s [u64]>> {
        inputs.iter().take(UP_SCALES + 1).copied().collect()
    }

    pub(super) fn infer_norm(&self, inputs: &[Option<&[u64]>]) -> Result<Vec<Vec<u64>>, String> {
        let norm = self.folded().map_err(|e| e.to_string())?;
        let mut outs = norm.infer(&SkipNormKernel::folded_inputs(inputs, NORM_SKIP))?;
        let mut shapes = self.without_norm().infer(&Self::product_inputs(inputs))?;
        if norm.outputs[3] {
            shapes.push(outs.pop().ok_or("the folded norm's sum has no shape")?);
        }
        Ok(shapes)
    }

    pub(super) fn prepare_norm(&self, cx: &PrepareCx<'_>, io: &KernelIo<'_>) -> Result<PreparedStep, GpuError> {
        let norm = self.folded()?;
        let (x, skip, gamma) = (io.input(A)?, io.input(NORM_SKIP)?, io.input(NORM_GAMMA)?);
        let m = x.elems() / self.k;
        let y = io.output(0)?;
        let scratch = norm.sum_scratch(cx, &x)?;
        let sum = norm.sum_of(io, x, scratch.as_ref())?;
        if self.norm_fused(m, skip.elems(), cx.caps()) {
            let Route::Direct(_, planned) = self.route(m, cx.caps(), &cx.options.gemm)? else {
                return Err(GpuError::Internal("the one-row MatMulNBits kernel planned another route".into()));
            };
            let spare = cx.gpu.unused_input()?;
            let mut inputs = vec![x.buf, io.input(B)?.buf, io.input(SCALES)?.buf];
            if self.up.is_some() {
                inputs.extend([io.input(UP_B)?.buf, io.input(UP_SCALES)?.buf]);
            }
            let bias = if self.bias { io.input(BIAS)?.buf } else { spare };
            let gate = if self.gate { io.input(GATE)?.buf } else { spare };
            inputs.extend([bias, gate, skip.buf, gamma.buf]);
            let d = planned.bind(cx.gpu, &inputs, &[y.buf, sum.buf])?;
            let line = format!("MatMulNBits '{}' with its norm '{}' folded: Lanes, M {m}", self.name, norm.name);
            return Ok(PreparedStep { dispatches: vec![d], plan: Some(line) });
        }
        norm.prepare_before(cx, io, NORM_SKIP, sum, &self.without_norm())
    }

    pub(super) fn plan_norm(
        &self,
        inputs: &[Option<&[u64]>],
        caps: &DeviceCaps,
        options: &ExecOptions,
    ) -> Result<Option<StepPlan>, String> {
        let norm = self.folded().map_err(|e| e.to_string())?;
        let x = inputs.first().copied().flatten().unwrap_or_default();
        let m = x.iter().product::<u64>() / self.k.max(1);
        let skip = inputs.get(NORM_SKIP).copied().flatten().unwrap_or_default().iter().product::<u64>();
        let mut plan = self.without_norm().plan(&Self::product_inputs(inputs), caps, options)?;
        if self.norm_fused(m, skip, caps) {
            let what = format!("MatMulNBits '{}'", self.name);
            let route = self.route(m, caps, &options.gemm).map_err(|e| format!("{what}: {e}"))?;
            if let (Some(p), Route::Direct(_, planned)) = (plan.as_mut(), route) {
                p.line = format!("{} (its norm '{}' folded: A made on the way)", p.line, norm.name);
                p.dispatches = vec![planned.entry()];
            }
            return Ok(plan);
        }
        norm.plan_before(plan, inputs, NORM_SKIP, caps, options)
    }
}

//! MatMulNBits' routes: which dispatches a step runs at one M (the one-row, GEMV or tiled kernel
//! directly, or B dequantised for the GEMM engine), and SwiGLU's gate and up projections as one
//! step.

use super::*;

/// How a MatMulNBits step runs at one M: what `prepare` binds and `plan` reports.
pub(super) enum Route {
    /// The GEMV or tiled kernel: one dispatch reading the packed weights.
    Direct(NbitsKind, OpDispatch),
    /// B dequantised into a `[K, N]` (constant weights) or `[N, K]` buffer, then the GEMM engine's plan.
    Dequant(OpDispatch, GemmPlan),
}

/// The buffers a MatMulNBits step binds.
pub(super) struct Operands<'a> {
    pub(super) a: &'a GpuBuffer,
    pub(super) b: &'a GpuBuffer,
    pub(super) scales: &'a GpuBuffer,
    pub(super) zp: Option<&'a GpuBuffer>,
    pub(super) bias: Option<&'a GpuBuffer>,
    pub(super) gate: Option<&'a GpuBuffer>,
    pub(super) y: &'a GpuBuffer,
}

impl NbitsKernel {
    /// This product gated by its up projection's result (input [`GATE`]) instead of reading the
    /// up projection's weights.
    pub(super) fn gated(&self) -> NbitsKernel {
        NbitsKernel { up: None, gate: true, ..self.clone() }
    }

    /// Both SwiGLU products: one row on the one-row kernel over both weights, else the up
    /// projection into a scratch buffer of Y's shape and this product gated by it.
    pub(super) fn prepare_dual(
        &self,
        cx: &PrepareCx<'_>,
        io: &KernelIo<'_>,
        up: &NbitsKernel,
        m: u64,
    ) -> Result<PreparedStep, GpuError> {
        let (a, y) = (io.input(A)?, io.output(0)?);
        let (up_b, up_scales) = (io.input(UP_B)?, io.input(UP_SCALES)?);
        if self.kind(m, cx.caps()) == NbitsKind::Lanes {
            let Route::Direct(_, planned) = self.route(m, cx.caps(), &cx.options.gemm)? else {
                return Err(GpuError::Internal("the one-row MatMulNBits kernel planned another route".into()));
            };
            let spare = cx.gpu.unused_input()?;
            let bias = if self.bias { io.input(BIAS)?.buf } else { spare };
            let inputs = [a.buf, io.input(B)?.buf, io.input(SCALES)?.buf, up_b.buf, up_scales.buf, bias, spare];
            let d = planned.bind(cx.gpu, &inputs, &[y.buf])?;
            let line = format!("MatMulNBits '{}' with its up projection: Lanes, M {m}", self.name);
            return Ok(PreparedStep { dispatches: vec![d], plan: Some(line) });
        }
        let scratch = cx.gpu.storage_buffer(y.elems() * self.ty.size(), "MatMulNBits up projection")?;
        let up_out = Tensor { buf: &scratch, shape: y.shape, ty: y.ty, constant: false };
        let up_io = KernelIo { inputs: vec![Some(a), Some(up_b), Some(up_scales)], outputs: vec![up_out] };
        let mut first = up.prepare(cx, &up_io)?;
        let mut inputs: Vec<Option<Tensor<'_>>> = io.inputs.iter().take(GATE).copied().collect();
        inputs.resize(GATE, None);
        inputs.push(Some(up_out));
        let second = self.gated().prepare(cx, &KernelIo { inputs, outputs: io.outputs.clone() })?;
        first.dispatches.extend(second.dispatches);
        first.plan = match (first.plan, second.plan) {
            (Some(u), Some(g)) => Some(format!("{g} (after its up projection: {u})")),
            (u, g) => g.or(u),
        };
        Ok(first)
    }

    /// The dispatches for `m` rows of A on `caps`.
    pub(super) fn route(&self, m: u64, caps: &DeviceCaps, options: &GemmOptions) -> Result<Route, GpuError> {
        let params = self.params(m)?;
        let kind = self.kind(m, caps);
        if kind == NbitsKind::Lanes && !self.lanes_can_run(m, caps) {
            return Err(GpuError::Internal(format!("the one-row MatMulNBits kernel cannot run {m} rows of this node")));
        }
        if kind != NbitsKind::Dequant {
            let source = self.source(kind, m, caps);
            let groups = match kind {
                NbitsKind::Gemv => self.n.div_ceil(u64::from(GEMV_COLS)) * m.div_ceil(u64::from(source.rows)),
                NbitsKind::Lanes => {
                    let l = source.lanes;
                    self.n.div_ceil(u64::from(l.cols)).div_ceil(u64::from(l.groups_per_workgroup()))
                }
                _ => self.n.div_ceil(TILE) * m.div_ceil(TILE),
            };
            let dispatch = OpDispatch::new(ShaderVariant::Op(OpShader::new(source)), &params, grid(groups, caps)?);
            return Ok(Route::Direct(kind, dispatch));
        }
        let grid = grid_for(self.n * u64::from(params.col_words), caps)?;
        let dequant =
            OpDispatch::new(ShaderVariant::Op(OpShader::new(self.source(NbitsKind::Dequant, m, caps))), &params, grid);
        let dtype = self.ty.float().ok_or_else(|| GpuError::Internal("MatMulNBits of a non-float type".into()))?;
        let mut problem = GemmProblem::simple(dtype, params.m, params.n, params.k, false, !self.untransposed());
        if self.bias {
            problem.epilogue.bias = Some(broadcast_layout(&[self.n], &[m, self.n], &problem)?);
        }
        if self.silu {
            problem.epilogue.activation = crate::gemm::Activation::Silu;
        }
        let mut plan = plan_gemm(&problem, caps, options)?;
        if self.gate {
            plan.add_output_flags(FLAG_RESIDUAL | FLAG_RESIDUAL_AFTER_ACT | FLAG_RESIDUAL_MUL);
        }
        Ok(Route::Dequant(dequant, plan))
    }

    /// B dequantised into a scratch buffer (`[K, N]` for constant weights, else `[N, K]`, read as
    /// a transposed B), then the GEMM engine (with the bias in its epilogue).
    pub(super) fn prepare_dequant(
        &self,
        cx: &PrepareCx<'_>,
        ops: &Operands<'_>,
        dequant: &OpDispatch,
        plan: &GemmPlan,
    ) -> Result<PreparedStep, GpuError> {
        let inputs: Vec<&GpuBuffer> = [ops.b, ops.scales].into_iter().chain(ops.zp).collect();
        let mut dispatches = Vec::new();
        let w = if self.weights_constant {
            // Constant weights: dequantised once, on the first prepare (queued before any run
            // that uses them), and kept for every shape set.
            let mut slot = self.dequantized.0.lock();
            match slot.as_ref() {
                Some(w) => w.clone(),
                None => {
                    let w = cx.gpu.storage_buffer(self.n * self.k * self.ty.size(), "MatMulNBits weights")?;
                    let once = dequant.bind(cx.gpu, &inputs, &[&w])?;
                    cx.gpu.run(&[&once])?;
                    slot.insert(w).clone()
                }
            }
        } else {
            let w = cx.gpu.storage_buffer(self.n * self.k * self.ty.size(), "MatMulNBits weights")?;
            dispatches.push(dequant.bind(cx.gpu, &inputs, &[&w])?);
            w
        };
        let bindings = GemmBindings { a: ops.a, b: &w, bias: ops.bias, out: ops.y };
        dispatches.extend(match ops.gate {
            Some(gate) => cx.gpu.prepare_gemm_residual(plan, bindings, gate)?,
            None => cx.gpu.prepare_gemm(plan, bindings)?,
        });
        let line = format!("MatMulNBits '{}': dequantised B, GEMM {:?}", self.name, plan.tiling);
        Ok(PreparedStep { dispatches, plan: Some(line) })
    }
}

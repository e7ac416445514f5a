//! GPU time of dispatches from timestamp queries (kernel microbenchmarks).

use super::{Dispatch, Gpu};
use crate::error::GpuError;

/// Measures dispatches with timestamps written at the start and end of a compute pass.
pub struct GpuTimer {
    queries: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    period_ns: f64,
}

impl GpuTimer {
    /// `None` when the device has no timestamp queries.
    pub fn new(gpu: &Gpu) -> Option<GpuTimer> {
        if !gpu.device.features().contains(wgpu::Features::TIMESTAMP_QUERY) {
            return None;
        }
        let queries = gpu.device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("timer"),
            ty: wgpu::QueryType::Timestamp,
            count: 2,
        });
        let resolve = gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("timer resolve"),
            size: 16,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        Some(GpuTimer { queries, resolve, period_ns: gpu.queue.get_timestamp_period() as f64 })
    }

    /// GPU seconds of one pass running `dispatches` `repeat` times.
    pub fn time(&self, gpu: &Gpu, dispatches: &[&Dispatch], repeat: u32) -> Result<f64, GpuError> {
        let stamps = gpu.scoped("timed run", || {
            let mut encoder =
                gpu.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("timed") });
            {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("timed"),
                    timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                        query_set: &self.queries,
                        beginning_of_pass_write_index: Some(0),
                        end_of_pass_write_index: Some(1),
                    }),
                });
                for _ in 0..repeat {
                    for d in dispatches {
                        d.record(&mut pass);
                    }
                }
            }
            encoder.resolve_query_set(&self.queries, 0..2, &self.resolve, 0);
            let rb = gpu.readback(16)?;
            gpu.copy_to_readback(&mut encoder, &super::GpuBuffer::new(self.resolve.clone(), 16), &rb);
            gpu.submit([encoder.finish()]);
            Ok(rb)
        })?;
        let mut ticks = [0u64; 2];
        gpu.read(&[&stamps], |_, bytes| {
            ticks[0] = u64::from_le_bytes(bytes[0..8].try_into().unwrap_or_default());
            ticks[1] = u64::from_le_bytes(bytes[8..16].try_into().unwrap_or_default());
        })?;
        Ok(ticks[1].saturating_sub(ticks[0]) as f64 * self.period_ns * 1e-9)
    }
}

// Each Text's functions (kernel/text.h): the Linux 6.1 call chain of the fast path, read in the
// 6.1 source as data/kernel/footprint-paths.txt lists them (no driver code, no error branches).
#include "kernel/text.h"

#include <array>

namespace kdsim::kernel {

namespace {

struct TextDef {
    std::string_view name;
    std::span<const std::string_view> functions;
};

constexpr std::string_view IRQ_ENTER_FNS[] = {"irq_enter"};
constexpr std::string_view IRQ_EXIT_FNS[] = {"irq_exit", "handle_softirqs", "__do_softirq", "irqentry_exit"};
constexpr std::string_view TIMER_INTERRUPT_FNS[] = {"hrtimer_interrupt", "__hrtimer_run_queues", "scheduler_tick", "update_curr"};
constexpr std::string_view WAKEUP_FNS[] = {"try_to_wake_up", "select_task_rq_fair"};
constexpr std::string_view WAKEUP_ACTIVATE_FNS[] = {"ttwu_do_activate", "enqueue_task_fair", "enqueue_entity", "check_preempt_curr", "check_preempt_wakeup", "update_curr"};
constexpr std::string_view CONTEXT_SWITCH_FNS[] = {"__schedule", "pick_next_task_fair", "dequeue_task_fair", "dequeue_entity", "put_prev_entity", "set_next_entity", "update_curr", "finish_task_switch", "__switch_to", "cpu_switch_to", "__switch_to_asm"};
constexpr std::string_view NAPI_POLL_FNS[] = {"net_rx_action", "__napi_poll", "napi_complete_done"};
constexpr std::string_view DRIVER_IRQ_FNS[] = {"napi_schedule_prep", "____napi_schedule"};
constexpr std::string_view FEC_INTERRUPT_FNS[] = {"fec_enet_interrupt", "napi_schedule_prep", "____napi_schedule"};
constexpr std::string_view DRIVER_RX_FNS[] = {"eth_type_trans", "napi_build_skb", "__napi_alloc_skb", "kmem_cache_alloc"};
constexpr std::string_view DMA_SYNC_FOR_CPU_FNS[] = {"dma_sync_single_for_cpu", "dma_unmap_single_attrs", "dma_direct_unmap_page", "__dma_page_dev_to_cpu", "v7_dma_inv_range", "l2c210_inv_range"};
constexpr std::string_view DMA_SYNC_FOR_DEVICE_FNS[] = {"dma_sync_single_for_device", "dma_map_single_attrs", "dma_direct_map_page", "__dma_page_cpu_to_dev", "v7_dma_clean_range"};
constexpr std::string_view GRO_RECEIVE_FNS[] = {"napi_gro_receive", "dev_gro_receive", "inet_gro_receive", "tcp4_gro_receive", "tcp_gro_receive"};
constexpr std::string_view GRO_MERGE_FNS[] = {"skb_gro_receive"};
constexpr std::string_view GRO_COMPLETE_FNS[] = {"napi_gro_complete", "inet_gro_complete", "tcp4_gro_complete", "napi_gro_flush", "gro_normal_list"};
constexpr std::string_view NETIF_RECEIVE_SKB_FNS[] = {"__netif_receive_skb", "__netif_receive_skb_core", "netif_receive_skb_list_internal", "__netif_receive_skb_list_core"};
constexpr std::string_view NETIF_RX_FNS[] = {"netif_rx", "enqueue_to_backlog"};
constexpr std::string_view PROCESS_BACKLOG_FNS[] = {"process_backlog"};
constexpr std::string_view IP_RCV_FNS[] = {"ip_rcv_core", "ip_rcv_finish_core", "ip_list_rcv", "ip_sublist_rcv", "ip_sublist_rcv_finish", "ip_list_rcv_finish", "ip_local_deliver", "ip_local_deliver_finish", "ip_protocol_deliver_rcu"};
constexpr std::string_view TCP_V4_RCV_FNS[] = {"tcp_v4_rcv", "tcp_v4_do_rcv", "tcp_rcv_established", "tcp_queue_rcv", "tcp_event_data_recv", "__tcp_ack_snd_check", "sock_def_readable"};
constexpr std::string_view TCP_ACK_FNS[] = {"tcp_ack", "tcp_rearm_rto", "cubictcp_cong_avoid", "cubictcp_acked"};
constexpr std::string_view TCP_SEND_ACK_FNS[] = {"__tcp_send_ack", "__tcp_transmit_skb", "__alloc_skb", "kmem_cache_alloc", "__ip_queue_xmit", "ip_local_out", "__ip_local_out", "ip_output", "ip_finish_output", "ip_finish_output2"};
constexpr std::string_view TCP_RECVMSG_FNS[] = {"tcp_recvmsg", "tcp_recvmsg_locked", "skb_copy_datagram_iter", "__skb_datagram_iter", "tcp_rcv_space_adjust", "tcp_cleanup_rbuf", "__kfree_skb", "skb_release_data", "kfree_skb_reason", "kmem_cache_free"};
constexpr std::string_view TCP_SENDMSG_FNS[] = {"tcp_sendmsg", "tcp_sendmsg_locked", "tcp_write_xmit", "__tcp_transmit_skb", "tcp_small_queue_check", "__alloc_skb", "kmem_cache_alloc"};
constexpr std::string_view UDP_RCV_FNS[] = {"__udp4_lib_rcv", "udp_queue_rcv_skb", "sock_def_readable"};
constexpr std::string_view UDP_RECVMSG_FNS[] = {"udp_recvmsg", "skb_copy_datagram_iter", "__skb_datagram_iter", "kfree_skb_reason", "skb_release_data", "kmem_cache_free"};
constexpr std::string_view UDP_SENDMSG_FNS[] = {"udp_sendmsg", "__ip_append_data", "__alloc_skb", "kmem_cache_alloc", "__ip_local_out", "ip_output", "ip_finish_output", "ip_finish_output2"};
constexpr std::string_view DEV_QUEUE_XMIT_FNS[] = {"__dev_queue_xmit", "validate_xmit_skb", "__qdisc_run", "pfifo_fast_enqueue", "pfifo_fast_dequeue", "sch_direct_xmit", "dev_hard_start_xmit"};
constexpr std::string_view COPY_TO_USER_FNS[] = {"__arch_copy_to_user", "arm_copy_to_user", "copy_user_enhanced_fast_string"};

constexpr std::array<TextDef, TEXTS> DEFS = {{
    {"none", {}},
    {"irq_enter", IRQ_ENTER_FNS},
    {"irq_exit", IRQ_EXIT_FNS},
    {"timer_interrupt", TIMER_INTERRUPT_FNS},
    {"wakeup", WAKEUP_FNS},
    {"wakeup_activate", WAKEUP_ACTIVATE_FNS},
    {"context_switch", CONTEXT_SWITCH_FNS},
    {"napi_poll", NAPI_POLL_FNS},
    {"driver_irq", DRIVER_IRQ_FNS},
    {"fec_interrupt", FEC_INTERRUPT_FNS},
    {"driver_rx", DRIVER_RX_FNS},
    {"dma_sync_for_cpu", DMA_SYNC_FOR_CPU_FNS},
    {"dma_sync_for_device", DMA_SYNC_FOR_DEVICE_FNS},
    {"gro_receive", GRO_RECEIVE_FNS},
    {"gro_merge", GRO_MERGE_FNS},
    {"gro_complete", GRO_COMPLETE_FNS},
    {"netif_receive_skb", NETIF_RECEIVE_SKB_FNS},
    {"netif_rx", NETIF_RX_FNS},
    {"process_backlog", PROCESS_BACKLOG_FNS},
    {"ip_rcv", IP_RCV_FNS},
    {"tcp_v4_rcv", TCP_V4_RCV_FNS},
    {"tcp_ack", TCP_ACK_FNS},
    {"tcp_send_ack", TCP_SEND_ACK_FNS},
    {"tcp_recvmsg", TCP_RECVMSG_FNS},
    {"tcp_sendmsg", TCP_SENDMSG_FNS},
    {"udp_rcv", UDP_RCV_FNS},
    {"udp_recvmsg", UDP_RECVMSG_FNS},
    {"udp_sendmsg", UDP_SENDMSG_FNS},
    {"dev_queue_xmit", DEV_QUEUE_XMIT_FNS},
    {"copy_to_user", COPY_TO_USER_FNS},
}};

} // namespace

std::string_view to_string(Text t) { return DEFS[static_cast<std::size_t>(t)].name; }

std::span<const std::string_view> text_functions(Text t) { return DEFS[static_cast<std::size_t>(t)].functions; }

} // namespace kdsim::kernel

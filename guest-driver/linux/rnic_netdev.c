// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The port's netdev.  An iWARP port needs one: rdma_cm resolves addresses
 * through it, the port is ACTIVE only while it has carrier and an IPv4
 * address, and the GID is its MAC.  rnic carries no Ethernet frames (the
 * device's host side owns TCP), so the netdev drops what it is given and
 * never ARPs: with IFF_NOARP every neighbour is valid at once, which is
 * what rdma_resolve_addr() waits for.
 *
 * Its MAC is the device's (QUERY_DEVICE, property mac): the GID and the
 * node GUID are made from it.  It never goes on the wire.
 */
#include <linux/etherdevice.h>
#include "rnic_ib.h"

static int rnic_netdev_open(struct net_device *nd)
{
	netif_carrier_on(nd);
	netif_start_queue(nd);
	return 0;
}

static int rnic_netdev_stop(struct net_device *nd)
{
	netif_stop_queue(nd);
	netif_carrier_off(nd);
	return 0;
}

static netdev_tx_t rnic_netdev_xmit(struct sk_buff *skb, struct net_device *nd)
{
	nd->stats.tx_dropped++;
	dev_kfree_skb_any(skb);
	return NETDEV_TX_OK;
}

/*
 * The speed the port reports (ib_get_eth_speed asks): the device has no
 * line rate, so it says 10 Gb/s rather than leave the core guessing.
 */
static int rnic_netdev_get_ksettings(struct net_device *nd,
				     struct ethtool_link_ksettings *ks)
{
	ethtool_link_ksettings_zero_link_mode(ks, supported);
	ks->base.speed = SPEED_10000;
	ks->base.duplex = DUPLEX_FULL;
	ks->base.port = PORT_OTHER;
	return 0;
}

static const struct ethtool_ops rnic_ethtool_ops = {
	.get_link_ksettings	= rnic_netdev_get_ksettings,
};

static const struct net_device_ops rnic_netdev_ops = {
	.ndo_open		= rnic_netdev_open,
	.ndo_stop		= rnic_netdev_stop,
	.ndo_start_xmit		= rnic_netdev_xmit,
	.ndo_validate_addr	= eth_validate_addr,
};

int rnic_netdev_create(struct rnic_ib_dev *dev)
{
	struct pci_dev *pdev = dev->rdev->pdev;
	struct net_device *nd;
	int err;

	nd = alloc_etherdev(0);
	if (!nd)
		return -ENOMEM;
	memcpy(dev->mac, dev->rdev->attr.mac, ETH_ALEN);
	eth_hw_addr_set(nd, dev->mac);
	strscpy(nd->name, "rnic%d", sizeof(nd->name));
	nd->netdev_ops = &rnic_netdev_ops;
	nd->ethtool_ops = &rnic_ethtool_ops;
	nd->flags |= IFF_NOARP;
	nd->priv_flags |= IFF_NO_QUEUE;
	SET_NETDEV_DEV(nd, &pdev->dev);
	netif_carrier_off(nd);
	err = register_netdev(nd);
	if (err) {
		free_netdev(nd);
		return err;
	}
	dev->netdev = nd;
	dev_info(&pdev->dev, "netdev %s, MAC %pM\n", nd->name, dev->mac);
	return 0;
}

void rnic_netdev_destroy(struct rnic_ib_dev *dev)
{
	if (!dev->netdev)
		return;
	unregister_netdev(dev->netdev);
	free_netdev(dev->netdev);
	dev->netdev = NULL;
}

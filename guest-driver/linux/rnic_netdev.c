// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The port's netdev.  An iWARP port needs one: rdma_cm resolves addresses
 * through it, the port is ACTIVE only while it has carrier and an IPv4
 * address, and the GID is the device's MAC (QUERY_DEVICE, property mac).
 *
 * The port takes a companion when the VM has one: a NIC of its own whose
 * permanent MAC is the device's (-device virtio-net-pci,mac=M -device
 * rnic,mac=M), as erdma pairs its ib_device with its NIC.  The RDMA
 * address is then an ordinary IP address of the VM that carries the
 * guest's own TCP as well (ping, ssh, the control sockets of perftest and
 * qperf), while RDMA goes over the device's host-side connections.  A
 * companion found later (its driver loaded after rnic) replaces the port's
 * own netdev; one that goes away leaves the port without a netdev until
 * it comes back.
 *
 * Without a companion the port has a netdev of its own, rnic%d, that
 * carries no frames (the device's host side owns TCP): it drops what it
 * is given and never ARPs; with IFF_NOARP every neighbour is valid at
 * once, which is what rdma_resolve_addr() waits for.
 *
 * dev->netdev changes under RTNL; the CM reads it under RCU.
 */
#include <linux/etherdevice.h>
#include <linux/rtnetlink.h>
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

static bool rnic_netdev_is_own(const struct net_device *nd)
{
	return nd->netdev_ops == &rnic_netdev_ops;
}

static bool rnic_netdev_is_companion(struct rnic_ib_dev *dev,
				     const struct net_device *nd)
{
	return !rnic_netdev_is_own(nd) && nd->type == ARPHRD_ETHER &&
	       net_eq(dev_net(nd), &init_net) &&
	       ether_addr_equal(nd->perm_addr, dev->mac);
}

/* The port's netdev becomes @nd (NULL: none).  Under RTNL. */
static void rnic_netdev_set(struct rnic_ib_dev *dev, struct net_device *nd)
{
	ib_device_set_netdev(&dev->ibdev, nd, 1);
	rcu_assign_pointer(dev->netdev, nd);
	if (nd)
		memcpy(dev->ibdev.iw_ifname, nd->name,
		       sizeof(dev->ibdev.iw_ifname));
	else
		dev->ibdev.iw_ifname[0] = '\0';
	synchronize_net();	/* no CM reader sees the old one any more */
}

/* Unregisters the port's own netdev; it is freed once RTNL is dropped. */
static void rnic_netdev_drop_own(struct net_device *nd)
{
	nd->needs_free_netdev = true;
	unregister_netdevice(nd);
}

static int rnic_netdev_event(struct notifier_block *nb, unsigned long event,
			     void *ptr)
{
	struct rnic_ib_dev *dev = container_of(nb, struct rnic_ib_dev, nb);
	struct net_device *nd = netdev_notifier_info_to_dev(ptr);
	struct net_device *cur = rtnl_dereference(dev->netdev);

	switch (event) {
	case NETDEV_REGISTER:
		if (!rnic_netdev_is_companion(dev, nd) ||
		    (cur && !rnic_netdev_is_own(cur)))
			break;
		rnic_netdev_set(dev, nd);
		if (cur)
			rnic_netdev_drop_own(cur);
		dev_info(&dev->rdev->pdev->dev, "port on companion %s\n",
			 nd->name);
		break;
	case NETDEV_UNREGISTER:
		if (nd != cur || rnic_netdev_is_own(nd))
			break;
		rnic_netdev_set(dev, NULL);
		dev_info(&dev->rdev->pdev->dev, "companion %s gone\n",
			 nd->name);
		break;
	case NETDEV_CHANGENAME:
		if (nd == cur)
			memcpy(dev->ibdev.iw_ifname, nd->name,
			       sizeof(dev->ibdev.iw_ifname));
		break;
	}
	return NOTIFY_DONE;
}

/* The port's own netdev, when no companion was there.  Under RTNL. */
static int rnic_netdev_create_own(struct rnic_ib_dev *dev)
{
	struct pci_dev *pdev = dev->rdev->pdev;
	struct net_device *nd;
	int err;

	nd = alloc_etherdev(0);
	if (!nd)
		return -ENOMEM;
	eth_hw_addr_set(nd, dev->mac);
	strscpy(nd->name, "rnic%d", sizeof(nd->name));
	nd->netdev_ops = &rnic_netdev_ops;
	nd->ethtool_ops = &rnic_ethtool_ops;
	nd->flags |= IFF_NOARP;
	nd->priv_flags |= IFF_NO_QUEUE;
	SET_NETDEV_DEV(nd, &pdev->dev);
	netif_carrier_off(nd);
	err = register_netdevice(nd);
	if (err) {
		free_netdev(nd);
		return err;
	}
	rnic_netdev_set(dev, nd);
	return 0;
}

/*
 * Gives the port its netdev: registering the notifier replays every
 * netdev there is, so a companion already there is taken at once.
 */
int rnic_netdev_attach(struct rnic_ib_dev *dev)
{
	int err;

	dev->nb.notifier_call = rnic_netdev_event;
	err = register_netdevice_notifier(&dev->nb);
	if (err)
		return err;
	rtnl_lock();
	if (!rtnl_dereference(dev->netdev))
		err = rnic_netdev_create_own(dev);
	rtnl_unlock();
	if (err)
		unregister_netdevice_notifier(&dev->nb);
	return err;
}

/* Lets the companion go (the notifier's own replay) or drops our netdev. */
void rnic_netdev_detach(struct rnic_ib_dev *dev)
{
	struct net_device *nd;

	unregister_netdevice_notifier(&dev->nb);
	rtnl_lock();
	nd = rtnl_dereference(dev->netdev);
	if (nd) {
		rnic_netdev_set(dev, NULL);
		if (rnic_netdev_is_own(nd))
			rnic_netdev_drop_own(nd);
	}
	rtnl_unlock();
}

/* The port's netdev's name, for the log. */
const char *rnic_netdev_name(struct rnic_ib_dev *dev)
{
	return dev->ibdev.iw_ifname[0] ? dev->ibdev.iw_ifname : "(none)";
}
